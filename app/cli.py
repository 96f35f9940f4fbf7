"""``dpcal``: the command line.

    dpcal serve [--workers N]                     start the service (DPCAL_HOST, DPCAL_PORT, DPCAL_WORKERS)
    dpcal algorithms [ID]                         list the algorithms, or describe one
    dpcal calibrate dp-sgd -p dataset_size=60000 -p batch_size=256 -p epochs=60 --target-epsilon 3 --delta 1e-5
    dpcal calibrate dp-sgd -p dataset_size=60000 -p batch_size=256 -p noise_multiplier=1.1 --calibrate epochs \
        --target-epsilon 3 --delta 1e-5           the most epochs at this noise (or steps, batch_size)
    dpcal privacy dp-sgd --params '{"dataset_size": 60000, "batch_size": 256, "steps": 14063, "noise_multiplier": 1}' \
        --delta 1e-5
    dpcal utility ALGORITHM -p ...
    dpcal compose tree.json --delta 1e-5          ε of any event tree (a file, or - for standard input); with
        --calibrate /pointer --target-epsilon 1   the number at the pointer meeting the target
    dpcal verify dp-sgd-last-iterate -p ... --delta 1e-5 --trials 20000    a verification job, with progress
    dpcal openapi [-o openapi/openapi.json] [--record-examples]   write the OpenAPI document (first recording
                                                  the answers to its examples in app/openapi_examples.json)
    dpcal --version

Requests run in-process by default (through the same HTTP application, so answers are identical), or against a
running server with ``--url`` (default: the DPCAL_URL variable), by the standard library's HTTP client alone
(:mod:`app.remote`: no web or accounting import, ~0.1 s of CPU a call). Output is a readable summary, or the JSON answer
with ``--json``. Progress of ``verify`` goes to standard error: a bar on a terminal, a line per update otherwise,
nothing with ``--quiet``. Output into a closed pipe (``| head``) ends quietly.
Exit status: 0 on success, 2 when the service rejects the input (the problem is printed), 1 when it is unreachable
(or, for verify, when the job fails or is cancelled).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__, keys, remote
from .remote import Refused
from .summaries import summary

if TYPE_CHECKING:
    from .settings import Settings


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # the reader (e.g. `head`) closed the pipe: not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's final flush must not raise again
        return 0


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "openapi":
        return _openapi(args)
    if args.command == "worker":
        return _worker()
    if args.command == "jobs":
        return _jobs(args)
    if args.command == "keys":
        settings = _environment_settings()
        return 2 if settings is None else keys.run(args, settings)
    try:
        answer = asyncio.run(_verify(args)) if args.command == "verify" else remote.readable(_answer(args))
    except Refused as problem:
        print(problem, file=sys.stderr)
        return 2
    except OSError as error:  # urllib's URLError, and httpx's transport errors as ConnectionError (verify)
        print(f"dpcal: cannot reach {args.url}: {error}", file=sys.stderr)
        return 1
    except ValueError as error:  # bad --params / -p syntax
        print(f"dpcal: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(_plain(answer), indent=2))
    elif args.command == "statement":
        print(answer.statement)
    else:
        calibrated = args.command == "compose" and args.calibrate is not None
        print(summary("calibrate" if calibrated else args.command, answer))
    return 1 if args.command == "verify" and answer.status != "succeeded" else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpcal", description="Privacy accounting and noise calibration for DP-ML.")
    parser.add_argument("--version", action="version", version=f"dpcal {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="start the HTTP service")
    serve.add_argument("--host", help="interface (default DPCAL_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default DPCAL_PORT or 8000)")
    serve.add_argument("--workers", type=int, help="server processes (default DPCAL_WORKERS or 1)")

    _operations_commands(commands)
    algorithms = commands.add_parser("algorithms", help="list the algorithms, or describe one")
    algorithms.add_argument("id", nargs="?", help="describe this algorithm")
    _common(algorithms)
    _accounting_commands(commands)
    _compose_command(commands)
    _verify_command(commands)
    return parser


def _common(p: argparse.ArgumentParser) -> None:
    """Where a command is answered (--url) and how it is printed (--json)."""
    p.add_argument(
        "--url",
        default=os.environ.get("DPCAL_URL") or None,
        help="a running dpcal server (default: DPCAL_URL, else answer in-process)",
    )
    p.add_argument("--json", action="store_true", help="print the JSON answer")


def _hyperparameters(p: argparse.ArgumentParser) -> None:
    """The algorithm and its hyperparameters (-p NAME=VALUE, --params JSON)."""
    p.add_argument("algorithm", help="algorithm id (dpcal algorithms lists them)")
    p.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="one hyperparameter; VALUE is read as JSON if it parses (60, 1e-5, true), else as text",
    )
    p.add_argument("--params", help="all hyperparameters as a JSON object (merged under -p)")


def _accounting_commands(commands: Any) -> None:
    """privacy, calibrate, utility and statement: one request each."""
    for name, text in (
        ("privacy", "ε at δ for given noise"),
        ("calibrate", "smallest noise for (ε, δ)"),
        ("utility", "predicted utility bounds"),
        ("statement", "a privacy statement to paste into a paper or model card (the privacy answer in words)"),
    ):
        command = commands.add_parser(name, help=text)
        _hyperparameters(command)
        if name == "calibrate":
            command.add_argument("--target-epsilon", type=float, required=True)
            command.add_argument(
                "--calibrate",
                metavar="KNOB",
                help="calibrate this integer knob (dp-sgd: epochs, steps, batch_size; leave it out of -p) at the noise "
                "given, instead of the noise",
            )
        if name != "utility":
            command.add_argument("--delta", type=float, required=True)
            command.add_argument(
                "--accountant",
                default="best",
                help="best (default) or one the algorithm offers (`dpcal algorithms`); the server checks the name",
            )
            command.add_argument("--orders", help="comma-separated Rényi orders")
        if name in ("privacy", "statement"):
            command.add_argument("--no-refine", action="store_true", help="grid orders only (as dp_accounting)")
            command.add_argument(
                "--checkpoints",
                help="ε after these steps, printed as a table: 'epochs', 'every:K' or comma-separated step counts",
            )
        if name in ("privacy", "calibrate"):
            command.add_argument("--statement", action="store_true", help="add the privacy statement")
        _common(command)


def _compose_command(commands: Any) -> None:
    compose = commands.add_parser(
        "compose",
        help="ε of any composition: an event tree as JSON (POST /v1/compose); with --calibrate, the number at a "
        "JSON Pointer meeting --target-epsilon (POST /v1/compose/calibrate)",
    )
    compose.add_argument("tree", metavar="FILE", help="the event tree as JSON: a file, or - for standard input")
    compose.add_argument("--delta", type=float, required=True)
    compose.add_argument("--accountant", default="best", help="best (default), rdp, tight, or paper for one algorithm")
    compose.add_argument("--neighbouring", default="add-remove", help="add-remove (default) or replace-one")
    compose.add_argument("--orders", help="comma-separated Rényi orders")
    compose.add_argument("--no-refine", action="store_true", help="grid orders only (as dp_accounting)")
    compose.add_argument("--checkpoints", help="ε after these releases: 'every:K' or comma-separated counts")
    compose.add_argument("--statement", action="store_true", help="add the privacy statement")
    compose.add_argument("--calibrate", metavar="POINTER", help="JSON Pointer into the tree to the number to calibrate")
    compose.add_argument("--target-epsilon", type=float, help="the target ε of --calibrate")
    compose.add_argument("--bounds", metavar="LO,HI", help="the range --calibrate searches (default: the field's)")
    _common(compose)


def _verify_command(commands: Any) -> None:
    verify = commands.add_parser("verify", help="run a verification job (simulated runs: utility and privacy audit)")
    _hyperparameters(verify)
    verify.add_argument("--delta", type=float, required=True)
    verify.add_argument("--target-epsilon", type=float, help="calibrate the noise for this ε first")
    verify.add_argument("--checks", default="utility,privacy-audit", help="comma-separated: utility, privacy-audit")
    verify.add_argument("--trials", type=int, default=1000)
    verify.add_argument(
        "--target-power", type=float, help="size the audit to certify this fraction of the accounted ε (not --trials)"
    )
    verify.add_argument("--seed", type=int, default=0)
    verify.add_argument("--problem", help="synthetic-problem settings as a JSON object")
    verify.add_argument("--idempotency-key", help="resubmitting with the same key returns the same job")
    verify.add_argument("--quiet", action="store_true", help="no progress on standard error")
    _common(verify)


def _operations_commands(commands: Any) -> None:
    """The commands that act on the service itself: worker, jobs, keys, openapi."""
    commands.add_parser(
        "worker",
        help="run verification jobs from the job store (DPCAL_JOBS_DB), apart from the API processes",
    )
    jobs = commands.add_parser("jobs", help="list, show or requeue jobs in the job store (DPCAL_JOBS_DB) directly")
    jobs.add_argument("action", choices=("list", "show", "requeue"))
    jobs.add_argument("id", nargs="?", help="the job (show, requeue)")
    jobs.add_argument("--status", choices=("queued", "running", "cancelling", "succeeded", "failed", "cancelled"))
    jobs.add_argument("--limit", type=int, default=20, help="jobs listed (newest first)")
    keys.add_parser(commands)
    openapi = commands.add_parser("openapi", help="write the OpenAPI document")
    openapi.add_argument("-o", "--output", type=Path, help="file to write (default: standard output)")
    openapi.add_argument(
        "--record-examples",
        action="store_true",
        help="first record the service's answers to its request examples in app/openapi_examples.json",
    )


def _params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if args.params:
        try:
            loaded = json.loads(args.params)
        except json.JSONDecodeError as error:
            raise ValueError(f"--params is not valid JSON: {error}") from None
        if not isinstance(loaded, dict):
            raise ValueError("--params must be a JSON object")
        params.update(loaded)
    for item in args.param:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise ValueError(f"-p expects NAME=VALUE, got {item!r}")
        try:
            params[name] = json.loads(raw)
        except json.JSONDecodeError:
            params[name] = raw
    return params


def _orders(args: argparse.Namespace) -> list[float] | None:
    if not getattr(args, "orders", None):
        return None
    return _numbers("--orders", args.orders)


def _checkpoints(spec: str | None) -> list[int] | dict[str, int] | str | None:
    """--checkpoints: 'epochs', 'every:K' or comma-separated step counts."""
    if spec is None or spec == "epochs":
        return spec
    try:
        if spec.startswith("every:"):
            return {"every": int(spec.removeprefix("every:"))}
        return [int(part) for part in spec.split(",")]
    except ValueError:
        raise ValueError(
            f"--checkpoints expects 'epochs', 'every:K' or step counts like 100,200, got {spec!r}"
        ) from None


Request = tuple[str, str, "dict[str, Any] | None"]
"""(method, path, JSON body) of one request of the API."""


def _request(args: argparse.Namespace) -> Request:
    """The request a command sends (the same in-process and to a server)."""
    if args.command == "algorithms":
        return "GET", f"/v1/algorithms/{args.id}" if args.id else "/v1/algorithms", None
    if args.command == "compose":
        return _compose(args)
    params = _params(args)
    if args.command == "utility":
        return "POST", "/v1/utility", remote.body(args.algorithm, params)
    options = {"delta": args.delta, "accountant": args.accountant, "orders": _orders(args)}
    if args.command == "calibrate":
        target = {"target_epsilon": args.target_epsilon, "calibrate": args.calibrate, "statement": args.statement}
        return "POST", "/v1/calibrate", remote.body(args.algorithm, params, **options, **target)
    return (
        "POST",
        "/v1/privacy",
        remote.body(
            args.algorithm,
            params,
            **options,
            refine_order=not args.no_refine,
            checkpoints=_checkpoints(args.checkpoints),
            statement=args.command == "statement" or args.statement,
        ),
    )


def _compose(args: argparse.Namespace) -> Request:
    """``dpcal compose FILE|-``: the tree's privacy, or with --calibrate the number at the pointer."""
    options = {
        "mechanism": _tree(args.tree),
        "delta": args.delta,
        "accountant": args.accountant,
        "neighbouring": args.neighbouring,
        "orders": _orders(args),
        "refine_order": not args.no_refine,
        "checkpoints": _checkpoints(args.checkpoints),
        "statement": args.statement,
    }
    if args.calibrate is None:
        return "POST", "/v1/compose", remote.fields(**options)
    if args.target_epsilon is None:
        raise ValueError("--calibrate needs --target-epsilon")
    bounds = None if args.bounds is None else _numbers("--bounds", args.bounds)
    target = {"calibrate": args.calibrate, "target_epsilon": args.target_epsilon, "bounds": bounds}
    return "POST", "/v1/compose/calibrate", remote.fields(**options, **target)


def _answer(args: argparse.Namespace) -> Any:
    """The JSON answer to the command's request: from the server at --url by the standard library alone (the light
    path: no web or accounting import), else from the service in this process."""
    method, path, payload = _request(args)
    if args.url:
        return remote.call(args.url, method, path, payload)
    return asyncio.run(_in_process(method, path, payload))


async def _in_process(method: str, path: str, payload: dict[str, Any] | None) -> Any:
    import httpx

    from .client import AsyncDpcalClient, Call
    from .main import app

    async with AsyncDpcalClient("http://dpcal.in-process", transport=httpx.ASGITransport(app=app)) as client:
        return await client.send(Call(method, path, Any, payload))


def _tree(source: str) -> Any:
    """The event tree in the file ``source`` (``-``: standard input), as JSON."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"cannot read the tree from {source}: {error.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"the tree in {source} is not valid JSON: {error}") from None


def _numbers(option: str, text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"{option} expects comma-separated numbers, got {text!r}") from None


async def _verify(args: argparse.Namespace) -> Any:
    """Submit a job and poll it with a progress bar (on standard error) until it finishes (an unreachable server is a
    :class:`ConnectionError`)."""
    import httpx

    try:
        return await _run_job(args)
    except httpx.TransportError as error:
        raise ConnectionError(str(error)) from error


async def _run_job(args: argparse.Namespace) -> Any:
    import httpx

    from .client import AsyncDpcalClient

    problem = json.loads(args.problem) if args.problem else None
    fields = {
        "target_epsilon": args.target_epsilon,
        "checks": [c.strip() for c in args.checks.split(",")],
        "trials": args.trials,
        "target_power": args.target_power,
        "seed": args.seed,
        "problem": problem,
    }
    if args.url:
        async with AsyncDpcalClient(args.url) as client:
            job = await client.submit_job(
                args.algorithm, _params(args), args.delta, idempotency_key=args.idempotency_key, **fields
            )
            return await client.wait_job(job.id, progress=_progress(args))
    import dataclasses
    import tempfile

    from .main import create_app
    from .settings import Settings

    with tempfile.TemporaryDirectory() as folder:
        app = create_app(dataclasses.replace(Settings.from_env(), jobs_db=f"{folder}/jobs.sqlite3"))
        try:
            async with AsyncDpcalClient("http://dpcal.in-process", transport=httpx.ASGITransport(app=app)) as client:
                job = await client.submit_job(args.algorithm, _params(args), args.delta, **fields)
                return await client.wait_job(job.id, interval=0.2, progress=_progress(args))
        finally:
            if getattr(app.state, "jobs", None) is not None:
                app.state.jobs.stop()


def _progress(args: argparse.Namespace) -> Callable[[Any], None] | None:
    """A bar redrawn in place on a terminal; a line per change when standard error is a file or a pipe."""
    if args.quiet or args.json:
        return None
    if sys.stderr.isatty():
        return _progress_bar
    seen: list[tuple[str, int]] = []

    def lines(job: Any) -> None:
        state = (job.status, job.progress.completed)
        if not seen or seen[-1] != state:
            seen.append(state)
            print(f"{job.status} {job.progress.completed}/{job.progress.total} trials{_left(job)}", file=sys.stderr)
            sys.stderr.flush()

    return lines


def _left(job: Any) -> str:
    """``, ~N s left`` while the job runs or waits (the plan's estimate before the first chunk, then the rate's)."""
    eta = job.progress.eta_seconds
    if job.status in ("succeeded", "failed", "cancelled") or eta is None:
        return ""
    return f", ~{eta:.2g} s left" if eta >= 0.1 else ", <0.1 s left"


def _progress_bar(job: Any) -> None:
    done, total = job.progress.completed, max(job.progress.total, 1)
    filled = int(30 * done / total)
    end = "\n" if job.status in ("succeeded", "failed", "cancelled") else ""
    print(
        f"\r{job.status:9} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} trials{_left(job):20}",
        end=end,
        file=sys.stderr,
        flush=True,
    )


def _plain(answer: Any) -> Any:
    if hasattr(answer, "model_dump"):  # a typed answer (verify)
        return answer.model_dump(mode="json")
    if isinstance(answer, list):
        return [_plain(a) for a in answer]
    return answer


def _environment_settings() -> Settings | None:
    """The service settings from the environment; None (the error printed) where a variable is invalid."""
    from .settings import Settings, SettingsError

    try:
        return Settings.from_env()
    except SettingsError as error:
        print(f"dpcal: {error}", file=sys.stderr)
        return None


def _jobs(args: argparse.Namespace) -> int:
    """Operations on the job store itself (no server needed): list, show one job as JSON, requeue one."""
    from .jobs.store import JobStore, iso

    settings = _environment_settings()
    if settings is None:
        return 2
    store = JobStore(settings.jobs_db)
    try:
        if args.action == "list":
            for job in store.page(args.status, args.limit):
                print(
                    f"{job.id}  {job.status:9s}  {job.algorithm:28s}  {job.completed}/{job.total} trials  "
                    f"attempts {job.attempts}  created {iso(job.created_at)}  owner {job.owner or '-'}"
                )
            return 0
        if not args.id:
            print(f"dpcal: jobs {args.action} needs a job id", file=sys.stderr)
            return 2
        found = store.get(args.id) if args.action == "show" else store.requeue_any(args.id)
        if found is None:
            print(f"dpcal: no job {args.id}", file=sys.stderr)
            return 1
        shown = dataclasses.asdict(found) | {"created_at": iso(found.created_at), "updated_at": iso(found.updated_at)}
        print(json.dumps(shown, indent=2) if args.action == "show" else f"{found.id}: {found.status}")
        return 0
    finally:
        store.close()


def _worker() -> int:
    from .jobs import daemon

    settings = _environment_settings()
    return 2 if settings is None else daemon.run(settings)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    settings = _environment_settings()  # before importing the app, which reads them too
    if settings is None:
        return 2
    from .connections import BoundedHeaders
    from .main import SUPERVISOR_VARIABLE
    from .observability import uvicorn_log_config

    host, port = args.host or settings.host, args.port or settings.port
    workers = args.workers or settings.workers
    if workers < 1:
        print("dpcal: --workers must be at least 1", file=sys.stderr)
        return 2
    busy = _port_in_use(host, port)
    if busy:
        print(
            f"dpcal: cannot listen on {host}:{port} ({busy}); choose another port, e.g. "
            f"DPCAL_PORT={port + 1} make serve (or dpcal serve --port {port + 1})",
            file=sys.stderr,
        )
        return 1
    if workers > 1:
        os.environ[SUPERVISOR_VARIABLE] = str(os.getpid())
    uvicorn.run(
        "app.main:app",
        host=host,
        port=port,
        log_level=settings.log_level,
        workers=workers,
        log_config=uvicorn_log_config(settings.log_format, settings.log_level),
        access_log=False,  # the service writes one access line per request, with its id and latency
        server_header=False,
        http=BoundedHeaders,  # a deadline for each request's headers (DPCAL_HEADER_TIMEOUT): no slow-loris holds
    )
    return 0


def _port_in_use(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound (e.g. "address already in use"), or None if it can."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as error:
        return error.strerror.lower() if error.strerror else str(error)
    return None


def _openapi(args: argparse.Namespace) -> int:
    """Write the OpenAPI document (after recording the service's answers to its request examples, if asked)."""
    from .main import create_app
    from .routes import examples

    if args.record_examples:
        answers = asyncio.run(_example_answers())
        text = json.dumps(answers, indent=1, ensure_ascii=False) + "\n"
        examples.RESPONSE_EXAMPLES_FILE.write_text(text, encoding="utf-8")
        examples.recorded_answers.cache_clear()  # the document below shows the answers just recorded
    text = json.dumps(create_app().openapi(), indent=2, ensure_ascii=False) + "\n"
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


async def _example_answers() -> dict[str, dict[str, Any]]:
    """The in-process service's answer to every request example of the POST endpoints, by path and algorithm."""
    import httpx

    from accountants.family import Operation

    from .main import create_app
    from .routes import examples

    app = create_app()
    answers: dict[str, dict[str, Any]] = {}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://dpcal.in-process", timeout=600) as client:
        for operation in (Operation.PRIVACY, Operation.CALIBRATE, Operation.UTILITY):
            path = f"/v1/{operation.value}"
            for algorithm, example in examples.request_examples(operation).items():
                response = await client.post(path, json=example["value"])
                response.raise_for_status()
                answers.setdefault(path, {})[algorithm] = response.json()
    return answers


if __name__ == "__main__":
    sys.exit(main())
