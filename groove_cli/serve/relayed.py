"""Commands the command line relays to the server (relay.py), run here by the command line's own
code: the same typer parser and the same renderers, in the client's working directory, with its
terminal facts, against the served KB's warm Index. What the command writes is answered as
ordered stdout and stderr pieces, with its exit code.

A relayed command runs only when the client's relevant environment and code equal the
server's, and only when it reaches the served index (the forwarding calls of client.py and
relay.claim check that); anything else — another index, other settings, a usage error that the
parser draws for the client's terminal, a bug — is declined and the command line runs it in its
own process, which prints the very same thing. Commands run one at a time (the working directory
is the process's); sys.stdout and sys.stderr route each write by context, so nothing else the
server writes ever mixes into a client's answer.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from groove_cli import messages
from groove_cli.serve import relay
from groove_cli.serve.relay import Decline

if TYPE_CHECKING:
    from groove_cli.dburl import IndexLocation
    from groove_cli.results import Results
    from groove_cli.serve.service import Service
    from groove_cli.status import StatusReport

log = logging.getLogger("groove.serve")
_LOCK = threading.Lock()
MAX_OUTPUT_CHARS = 8_000_000
"""A relayed command's answer is held in memory: a longer output is declined."""
_COMMANDS: dict[str | None, Any] = {}
"""The click command of each relayed command name, built once."""


@dataclass
class Run:
    """One relayed command: the client's stream facts, what it wrote, what it reached."""

    service: Service
    facts: Mapping[int, Mapping[str, Any]]
    output: list[list[Any]] = field(default_factory=list)
    claimed: bool = False
    size: int = 0

    def write(self, fd: int, text: str) -> None:
        self.size += len(text)
        if self.size > MAX_OUTPUT_CHARS:  # `get` of a huge note: the client streams it itself
            raise Decline("the output is too large to relay")
        if self.output and self.output[-1][0] == fd:
            self.output[-1][1] += text
        else:
            self.output.append([fd, text])

    def claim(self, index: str) -> Any:
        """The served KB of `index`; Decline when this server does not serve it."""
        served = self.service.by_index(index)
        if served is None:
            raise Decline("not an index served here")
        self.claimed = True
        return served

    def claim_location(self, location: IndexLocation) -> Any:
        from groove_cli.serve.state import index_id

        return self.claim(index_id(location))

    def search(self, request: Mapping[str, Any]) -> Results:
        self.claim(str(request.get("index")))
        results = self.service.cli_search(request)
        if isinstance(results, str):
            raise Decline(results)
        return results

    def status(self, index: str) -> StatusReport:
        served = self.claim(index)
        with served.lease() as opened:
            return opened.status()  # type: ignore[no-any-return]


_current: ContextVar[Run | None] = ContextVar("groove_relayed_run", default=None)


class Routed:
    """sys.stdout or sys.stderr in the server: a relayed command's writes go to its answer
    (and it sees the client's terminal facts); every other write goes to the real stream."""

    def __init__(self, real: Any, fd: int) -> None:
        self._real = real
        self._fd = fd

    def write(self, text: str) -> int:
        run = _current.get()
        if run is None:
            return int(self._real.write(text))
        run.write(self._fd, text)
        return len(text)

    def flush(self) -> None:
        if _current.get() is None:
            self._real.flush()

    def isatty(self) -> bool:
        run = _current.get()
        return bool(run.facts[self._fd]["tty"]) if run else bool(self._real.isatty())

    @property
    def encoding(self) -> str:
        run = _current.get()
        return str(run.facts[self._fd]["encoding"]) if run else str(self._real.encoding)

    def fileno(self) -> int:
        if _current.get() is not None:
            import io

            raise io.UnsupportedOperation("a relayed command's output has no descriptor")
        return int(self._real.fileno())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def install_routing() -> None:
    """Route sys.stdout and sys.stderr by context (once per process)."""
    if not isinstance(sys.stdout, Routed):
        sys.stdout = Routed(sys.stdout, 1)
    if not isinstance(sys.stderr, Routed):
        sys.stderr = Routed(sys.stderr, 2)


def refusal(request: Mapping[str, Any]) -> str | None:
    """Why this server does not run the request at all, or None."""
    argv = request.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return "no argv"
    if relay.invoked_command(argv) not in relay.RELAYED or any(a in relay.SKIP for a in argv):
        return "not a relayed command"
    if request.get("code") != relay.code_dir():
        return "other groove code"
    if request.get("env") != relay.relevant_env(os.environ):
        return "another environment"
    if not isinstance(request.get("cwd"), str):
        return "no working directory"
    for name in ("stdout", "stderr"):
        facts = request.get(name)
        if not isinstance(facts, dict) or not isinstance(facts.get("encoding"), str):
            return f"no {name} facts"
    return None


def command_for(argv: list[str]) -> Any:
    """The click command that runs `argv`, as cli_app.main builds it (built once per name)."""
    name = relay.invoked_command(argv)
    if name not in _COMMANDS:
        import typer

        from groove_cli.cli_app import app, narrowed

        _COMMANDS[name] = typer.main.get_command(narrowed(app, argv))
    return _COMMANDS[name]


def run_relayed(service: Service, request: Mapping[str, Any]) -> dict[str, Any]:
    """Run a relayed command (see the module doc): `{exit_code, output}` or `{declined}`."""
    reason = refusal(request)
    if reason is not None:
        return {"declined": reason}
    argv = list(request["argv"])
    run = Run(service, {1: request["stdout"], 2: request["stderr"]})
    with _LOCK, relay.serving_as(run):
        previous = os.getcwd()
        token = _current.set(run)
        try:
            os.chdir(str(request["cwd"]))
            code = command_for(argv).main(args=argv, prog_name="groove", standalone_mode=False)
        except Decline as exc:
            return {"declined": str(exc)}
        except BaseException as exc:  # usage errors, bugs: the client shows them
            if isinstance(exc, KeyboardInterrupt):
                raise
            log.debug("relayed command declined: %r", exc)
            return {"declined": exc.__class__.__name__}
        finally:
            _current.reset(token)
            messages.set_verbose(False)
            os.chdir(previous)
    if not run.claimed:
        return {"declined": "the command reached no served index"}
    return {"exit_code": int(code or 0), "output": run.output}
