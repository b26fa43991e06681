# The lectio code location (and the image the webserver and daemon run from).
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends dpkg apt-utils && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/lectio
COPY . .
# A CPU build of torch first: a plain requirement would pull a multi-GB CUDA build.
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
    && pip install --no-cache-dir -e .
ENV LECTIO_HOME=/var/lib/lectio DAGSTER_HOME=/opt/dagster
RUN mkdir -p $DAGSTER_HOME && cp dagster.yaml $DAGSTER_HOME/dagster.yaml
# Not root: a process that escapes lectio gets a user that owns only lectio's state.
RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin lectio \
    && mkdir -p $LECTIO_HOME && chown -R lectio:lectio $LECTIO_HOME $DAGSTER_HOME
USER lectio
