"""The processes docker-compose runs, each its own, on one machine: the code location (`dagster
code-server start`), the webserver and the daemon, sharing one DAGSTER_HOME (the project's
dagster.yaml: run storage in PostgreSQL, the home's embedded server standing in for docker-compose's
`postgres`; the run queue), and the search service as `lectio serve --workers 2`.

An ingest run of one fixture source is submitted to the webserver's GraphQL API as the UI's
Materialize button submits it (the partition's tag); the daemon dequeues it and the code server
starts its worker; the index is built by a run launched the same way. The index is then searched
over HTTP through the one port of `lectio serve --workers 2`, and the answers name more than one
worker process. Every process started here is stopped at the end, its children too, however the
test ended."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psutil
import pytest
import yaml
from dagster import AssetKey, DagsterEventType, DagsterInstance, DagsterRunStatus
from dagster_graphql import DagsterGraphQLClient

from lectio.serving.app import PROCESS_HEADER
from cli import main as cli
from pipelines.home import prepare_dagster_env
from assets.names import INDEX_JOB, INGEST_ASSETS, INGEST_JOB
from tests.conftest import FIXTURES, PROJECT, own_home

SOURCE = "kjv"  # Philippians 4 of the KJV: a scripture source, public, a few dozen chunks
BIN = Path(sys.executable).parent  # the dagster commands of this Python, as docker-compose runs them
# Loading the code location, a run's worker and each service worker imports torch and the model
# code; a loaded 2-core machine takes minutes for what an idle one does in seconds.
DEADLINE_S = 600
FINISHED = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _one_fixture_source(source_id: str) -> str:
    listed = yaml.safe_load((FIXTURES / "sources.yaml").read_text())["sources"]
    return yaml.safe_dump({"sources": [source for source in listed if source["id"] == source_id]})


def _stop(child: subprocess.Popen) -> None:
    """`child` and every process under it (a code server's own gRPC server and run workers,
    uvicorn's workers) asked to stop, and killed if they have not within 30 s."""
    try:
        family = [psutil.Process(child.pid), *psutil.Process(child.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for process in family:
        try:
            process.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(family, timeout=30)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    try:
        os.killpg(child.pid, signal.SIGKILL)  # whatever of its session is left, orphans included
    except ProcessLookupError:
        pass
    child.wait()


@contextmanager
def _started(name: str, argv: list[str], logs: Path, env: dict[str, str], cwd: Path = PROJECT):
    """`argv` in a session of its own, its output in logs/<name>.log; stopped afterwards."""
    with open(logs / f"{name}.log", "wb") as log:
        child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
    try:
        yield child
    finally:
        _stop(child)


def _tails(logs: Path) -> str:
    """The end of every process's log, for a failure's message."""
    return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}" for path in sorted(logs.glob("*.log")))


def _wait(what: str, ready, processes, logs: Path):
    """ready()'s first true answer, polled until DEADLINE_S; fails early, with the logs, when one of
    `processes` has exited."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        for process in processes:
            assert process.poll() is None, f"{process.args[:3]} exited while waiting for {what}\n{_tails(logs)}"
        answer = ready()
        if answer:
            return answer
        time.sleep(0.5)
    raise AssertionError(f"no {what} after {DEADLINE_S} s\n{_tails(logs)}")


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _get(url: str, timeout: float = 60) -> tuple[int, dict | str, str | None]:
    """Status, body and the process header of one GET, on a connection of its own."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            status, body, headers = answer.status, answer.read().decode(), answer.headers
    except urllib.error.HTTPError as exc:
        status, body, headers = exc.code, exc.read().decode(), exc.headers
    try:
        body = json.loads(body)
    except ValueError:
        pass
    return status, body, headers.get(PROCESS_HEADER)


def _answers(url: str):
    """_get(url), or None while nothing answers yet."""
    try:
        return _get(url)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def _succeeds(client: DagsterGraphQLClient, run_id: str, processes, logs: Path) -> None:
    def finished():
        status = client.get_run_status(run_id)
        return status if status in FINISHED else None

    status = _wait(f"the end of run {run_id}", finished, processes, logs)
    assert status == DagsterRunStatus.SUCCESS, f"run {run_id}: {status}\n{_tails(logs)}"


@pytest.mark.slow
@pytest.mark.network
def test_dagster_processes_and_serve_workers_as_docker_compose_runs_them(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    with ExitStack() as stack:
        home = stack.enter_context(own_home("lectio-processes-", lambda: _one_fixture_source(SOURCE)))
        patch = stack.enter_context(pytest.MonkeyPatch.context())
        for key in ("DAGSTER_HOME", "LECTIO_DAGSTER_URL"):  # prepare_dagster_env sets them here too
            patch.setenv(key, "")
        env = {**os.environ, **prepare_dagster_env(home.settings, home.database), "PYTHONUNBUFFERED": "1"}
        dagster_home = Path(env["DAGSTER_HOME"])

        grpc_port, web_port = _free_port(), _free_port()
        workspace = dagster_home / "workspace.yaml"
        workspace.write_text(yaml.safe_dump({"load_from": [
            {"grpc_server": {"host": "127.0.0.1", "port": grpc_port, "location_name": "lectio"}}]}))
        code = stack.enter_context(_started("code", [
            str(BIN / "dagster"), "code-server", "start", "-h", "127.0.0.1", "-p", str(grpc_port),
            "-m", "pipelines.definitions", "-a", "defs", "--location-name", "lectio"], logs, env))
        # The code server listens once the code is loaded (docker-compose's health check waits so).
        _wait("code server", lambda: _listening(grpc_port), [code], logs)
        webserver = stack.enter_context(_started("webserver", [
            str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p", str(web_port), "-w", str(workspace)],
            logs, env, cwd=dagster_home))
        daemon = stack.enter_context(_started("daemon", [
            str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], logs, env, cwd=dagster_home))
        dagster = [code, webserver, daemon]
        _wait("webserver", lambda: _answers(f"http://127.0.0.1:{web_port}/server_info"), dagster, logs)

        # The UI's Materialize button: the job, and the partition as a tag; the daemon dequeues it.
        client = DagsterGraphQLClient("127.0.0.1", port_number=web_port, timeout=60)
        ingest = client.submit_job_execution(INGEST_JOB, repository_location_name="lectio",
                                             tags={"dagster/partition": SOURCE})
        _succeeds(client, ingest, dagster, logs)
        index = client.submit_job_execution(INDEX_JOB, repository_location_name="lectio")
        _succeeds(client, index, dagster, logs)

        instance = stack.enter_context(DagsterInstance.get())
        # Queued by the webserver, then started by the daemon's launcher.
        events = {e.dagster_event_type for e in instance.all_logs(ingest) if e.is_dagster_event}
        assert {DagsterEventType.RUN_ENQUEUED, DagsterEventType.RUN_STARTING} <= events
        made = [e.dagster_event for e in instance.all_logs(ingest, of_type=DagsterEventType.ASSET_MATERIALIZATION)]
        assert {(e.asset_key, e.partition) for e in made} == {(AssetKey(asset), SOURCE) for asset in INGEST_ASSETS}
        # Its steps ran in a worker the code server started: none of the processes started here.
        pids = {e.pid for e in made}
        assert None not in pids and pids.isdisjoint({os.getpid(), *(p.pid for p in dagster)})

        serve_port = _free_port()
        url = f"http://127.0.0.1:{serve_port}"
        serve = stack.enter_context(_started("serve", [
            sys.executable, "-m", "cli", "serve", "--port", str(serve_port), "--workers", "2",
            "--pool", "2"], logs, dict(os.environ)))
        _wait("a ready service", lambda: (_answers(f"{url}/ready") or [None])[0] == 200, [serve], logs)

        # Each search on a connection of its own, until two workers have answered (each loads the
        # model before it accepts); every answer is the same.
        query = urllib.parse.urlencode({"q": "Philippians 4:13"})
        answered: dict[str, int] = {}

        def search_until_two_workers():
            status, body, pid = _get(f"{url}/search?{query}")
            assert status == 200 and body["results"][0]["refs"] == ["phil_4_13"], body
            answered[pid] = answered.get(pid, 0) + 1
            return len(answered) > 1

        _wait("answers from two workers", search_until_two_workers, [serve], logs)
        assert set(answered) <= {str(p.pid) for p in psutil.Process(serve.pid).children()}

        # /metrics, whichever worker answers it, counts every worker's searches.
        status, text, _ = _get(f"{url}/metrics")
        counted = [line for line in text.splitlines()
                   if line.startswith('lectio_requests_total{endpoint="/search",status="200"}')]
        assert status == 200 and counted and float(counted[0].split()[-1]) == sum(answered.values()), (answered, text)

        # Its supervisor killed with -9: the workers end with it and free the port (they once
        # served on unsupervised, and the next start found the address in use).
        workers = psutil.Process(serve.pid).children()
        serve.kill()
        serve.wait()
        _wait("the workers to end with their supervisor", lambda: not any(w.is_running() and
              w.status() != psutil.STATUS_ZOMBIE for w in workers), [], logs)
        with socket.socket() as again:  # as a server binds: past connections' TIME_WAIT, not past a listener
            again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            again.bind(("127.0.0.1", serve_port))


@pytest.mark.parametrize("argv, problem", [
    (["--workers", "0"], "lectio serve: --workers must be at least 1, not 0"),
    (["--workers", "2", "--pool", "0"], "lectio serve: --pool must be at least 1, not 0"),
])
def test_bad_serve_options_are_one_line(argv, problem, capsys):
    assert cli(["serve", *argv]) == 2
    assert capsys.readouterr().err.strip() == problem


def test_a_bad_setting_stops_serve_before_any_worker_starts(monkeypatch, capsys):
    monkeypatch.setenv("LECTIO_AUTH_SECRET", "short")
    assert cli(["serve", "--workers", "2", "--port", str(_free_port())]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lectio serve: LECTIO_AUTH_SECRET must be at least 32 bytes") and "\n" not in err


def test_a_worker_that_cannot_start_stops_serve_with_a_failure():
    # Every check in the parent passes; each worker then fails to import its app. uvicorn's
    # supervisor stops, and `lectio serve` must say so and exit non-zero, not 0 as if served.
    with own_home("lectio-serve-fail-", lambda: _one_fixture_source("web")):
        script = ("import sys; from lectio.serving import app; app.WORKER_APP = 'lectio.serving.no_such_module:app'; "
                  "from cli import main; sys.exit(main(sys.argv[1:]))")
        done = subprocess.run([sys.executable, "-c", script, "serve", "--workers", "2", "--port", str(_free_port())],
                              cwd=PROJECT, env=dict(os.environ),
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "lectio serve: a worker failed to start (its error is above); the service stopped")
