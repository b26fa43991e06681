"""`lectio serve`: the HTTP search service, in one process or under uvicorn's supervisor."""

from __future__ import annotations

import os
import sys

from lectio.settings import load_settings


def serve(args) -> int:
    import uvicorn

    from lectio.embedding import model
    from lectio.serving import app
    from lectio.serving.auth import Verifier
    from lectio.settings import auth_settings

    for option in ("workers", "pool"):
        if getattr(args, option) < 1:
            raise ValueError(f"--{option} must be at least 1, not {getattr(args, option)}")
    model.check_settings()  # a bad model setting is one line here, not a traceback from the server's start
    verifier = Verifier.of(auth_settings())
    if args.workers == 1:
        uvicorn.run(app.create_app(load_settings(), verifier, pool_size=args.pool), host=args.host, port=args.port,
                    **app.SERVER_OPTIONS)
        return 0
    return _serve_workers(args)


def _serve_workers(args) -> int:
    """uvicorn's supervisor and `args.workers` processes it starts, sharing the port. Every setting
    was checked above, in this process, so a bad one is one line and no worker starts; each worker
    reads the same environment (lectio.serving.app.from_environment)."""
    import uvicorn
    from uvicorn.config import STARTUP_FAILURE
    from uvicorn.supervisors import Multiprocess

    from lectio.serving import app

    settings = load_settings()
    app.build_mirror_first(settings)
    config = uvicorn.Config(app.WORKER_APP, factory=True, workers=args.workers, host=args.host, port=args.port,
                            timeout_worker_healthcheck=app.WORKER_PING_SECONDS, **app.SERVER_OPTIONS)
    with app.metrics_folder() as shared:
        os.environ.update({app.POOL_ENV: str(args.pool), app.MULTIPROCESS_ENV: shared,
                           app.SUPERVISOR_ENV: str(os.getpid())})
        # uvicorn's supervisor, not uvicorn.run: run() returns as if all went well when the
        # supervisor stopped because a worker could not start, and a caller must be told.
        supervisor = Multiprocess(config, sockets=[config.bind_socket()])
        supervisor.run()
    if any(worker.exitcode == STARTUP_FAILURE for worker in supervisor.processes):
        print("lectio serve: a worker failed to start (its error is above); the service stopped", file=sys.stderr)
        return 1
    return 0
