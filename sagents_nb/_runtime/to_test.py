"""`session.to_test(...)`: a stepped session written as a pytest file that replays it offline."""

from __future__ import annotations

import importlib
import keyword
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._base.errors import ConfigurationError
from .replay_record import Recording
from .replay_source import render

if TYPE_CHECKING:
    from .agent import Agent
    from .session import Session


def write_test(
    session: Session, path: str | os.PathLike[str], *, agents: str, overwrite: bool = False
) -> Path:
    """Write the pytest file replaying `session` to `path`; see `Session.to_test`."""
    target = Path(path)
    if target.suffix != ".py":
        raise ConfigurationError(f"to_test writes a Python file: {str(target)!r} should end in .py")
    module, attribute = _split_spec(agents)
    if target.stem == module.partition(".")[0]:
        raise ConfigurationError(
            f"the test file {target.name!r} would shadow the module {module!r} it imports the "
            "agents from; give the test another name (e.g. test_<lesson>.py)"
        )
    if target.exists() and not overwrite:
        raise ConfigurationError(
            f"{str(target)!r} exists; pass overwrite=True to replace it, or another path"
        )
    agent = _import_agents(session, module, attribute, target.resolve().parent)
    data = Recording(session, agent).data()
    source = render(module=module, attribute=attribute, data=data)
    compile(source, str(target), "exec")  # the file is valid Python, whatever the texts held
    target.write_text(source, encoding="utf-8")
    return target


def _split_spec(spec: object) -> tuple[str, str]:
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise ConfigurationError(
            f"agents= names where the test imports the agents from, as 'module:attribute' "
            f"(e.g. agents='lesson:boss' for `boss` in lesson.py), not {spec!r}"
        )
    module, attribute = spec.split(":")
    for part in (*module.split("."), *attribute.split(".")):
        if not part.isidentifier() or keyword.iskeyword(part):
            raise ConfigurationError(
                f"agents={spec!r}: {part!r} is not a Python name; give 'module:attribute' "
                "with dotted names (e.g. 'lessons.banking:boss')"
            )
    return module, attribute


def _import_agents(session: Session, module: str, attribute: str, beside: Path) -> Agent:
    """The agent at `module:attribute`, imported as the test will (pytest puts the test's
    folder on `sys.path`)."""
    spec = f"{module}:{attribute}"
    try:
        value: Any = _import(module, beside)
    except ModuleNotFoundError as exc:
        if exc.name not in _prefixes(module):
            raise _import_failed(spec, module, exc) from exc
        raise ConfigurationError(
            f"agents={spec!r}: no module {exc.name!r} here nor beside the test file ({beside}); "
            f"the test imports the agents from it, so save their configuration as {module}.py "
            "there (or make it importable) first"
        ) from exc
    except Exception as exc:
        raise _import_failed(spec, module, exc) from exc
    where = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ConfigurationError(
                f"agents={spec!r}: {where} has no attribute {part!r}; name the variable that "
                "holds the top agent"
            )
        value, where = getattr(value, part), f"{where}.{part}"
    # the Agent class is the session's agent's (importing agent.py here would be a cycle)
    if not isinstance(value, type(session.agent)):
        raise ConfigurationError(
            f"agents={spec!r} is a {type(value).__name__}, not an sn.Agent; name the top agent"
        )
    if value.name != session.agent.name:
        raise ConfigurationError(
            f"agents={spec!r} is agent {value.name!r}, but this session's top agent is "
            f"{session.agent.name!r}; name the agent the session was made with"
        )
    return value


def _import(module: str, beside: Path) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name not in _prefixes(module) or str(beside) in sys.path:
            raise
    sys.path.insert(0, str(beside))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(beside))


def _prefixes(module: str) -> set[str]:
    """`pkg.mod` and the packages it is in (`pkg`)."""
    parts = module.split(".")
    return {".".join(parts[: i + 1]) for i in range(len(parts))}


def _import_failed(spec: str, module: str, exc: Exception) -> ConfigurationError:
    return ConfigurationError(
        f"agents={spec!r}: importing {module!r} failed ({type(exc).__name__}: {exc}); the test "
        "would fail the same way"
    )
