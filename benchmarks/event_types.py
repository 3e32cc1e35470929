"""The event and message types as pydantic models, `msgspec` structs and plain slotted classes.

Issue 32 item 3 asks, before first use is cut further, what the events would cost as something
lighter than pydantic models behind the same public names. This script writes the real shapes
(every class and field of `sagents_nb/events.py` and `_base/messages.py`, read from their source)
three ways into a temporary folder and measures each:

- **import**: a fresh process importing the library and defining every class, over bare Python,
  alone and after what a first run imports anyway (httpx, asyncio and the rest of FIRST_RUN's
  modules other than pydantic and sagents_nb: the context), in interleaved rounds; with it,
  the same process constructing one turn's objects (the first use: pydantic as today, without
  schema builds, through `model_construct`; and validated, which builds the schemas);
- **a turn**: constructing a fanout child turn's events and messages (10 objects), steady state;
- **JSON**: dumping that turn's events (`model_dump_json` / `msgspec.json.encode` / `json.dumps`
  of the fields), the dicts (`model_dump` / `msgspec.to_builtins`), and parsing them back by
  their `type` (`parse_event`'s union / a tagged-union decoder / a lookup by `type`);

and estimates FIRST_RUN (`benchmarks/run.py`) with each: FIRST_RUN measured in the same rounds,
minus what the pydantic variant adds to the context, plus what the alternative adds.

    .venv/bin/python benchmarks/event_types.py [--rounds 21] [--callgrind] [--json]

msgspec must be importable (it is in the shared venv; otherwise build a venv under
benchmarks/.envs with sagents_nb's dependencies and msgspec, and run the script with it).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

from run import FIRST_REQUEST, FIRST_RUN

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "sagents_nb"
SOURCES = (PACKAGE / "_base" / "messages.py", PACKAGE / "events.py")
NESTED = ("ToolCall", "Message", "Usage", "PausedRequest")
"""The classes other classes hold as fields."""
PYDANTIC_FAMILY = ("pydantic", "pydantic_core", "annotated_types", "typing_extensions")
PYDANTIC_FAMILY += ("typing_inspection", "sagents_nb", "msgspec")


# the shapes, from the source


class Shape:
    """One class as written: its base, fields (name, annotation text, default text or None)
    and class-level settings (`ends_step = True`...)."""

    def __init__(self, name: str, base: str) -> None:
        self.name, self.base = name, base
        self.fields: list[tuple[str, str, str | None]] = []
        self.settings: list[tuple[str, str]] = []
        self.frozen = False

    @property
    def tag(self) -> str | None:
        """The `type` literal of an event class, None for the base and non-events."""
        for name, _, default in self.fields:
            if name == "type" and default is not None:
                return str(ast.literal_eval(default))
        return None


def read_shapes() -> tuple[list[Shape], dict[str, str]]:
    """Every model class of the two source files, in definition order, and their type aliases
    (`Role`, `ToolStatus`)."""
    shapes: list[Shape] = []
    aliases: dict[str, str] = {}
    for source in SOURCES:
        for node in ast.parse(source.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript):
                target = node.targets[0]
                if isinstance(target, ast.Name) and target.id in ("Role", "ToolStatus"):
                    aliases[target.id] = ast.unparse(node.value)
            if not isinstance(node, ast.ClassDef) or not node.bases:
                continue
            base = ast.unparse(node.bases[0])
            if base not in ("BaseModel", "Model", "Event"):
                continue
            shape = Shape(node.name, "BaseModel" if base == "Model" else base)
            shape.frozen = any(
                k.arg == "frozen" and ast.unparse(k.value) == "True" for k in node.keywords
            )
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    name, annotation = item.target.id, ast.unparse(item.annotation)
                    value = None if item.value is None else ast.unparse(item.value)
                    if value is not None:  # the structs' `field`, as pydantic's `Field`
                        value = value.replace("field(default_factory=", "Field(default_factory=")
                    if annotation.startswith("ClassVar"):
                        shape.settings.append((name, value or "None"))
                    elif name == "model_config":
                        shape.frozen = "frozen=True" in (value or "")
                    elif not (value or "").startswith("PrivateAttr"):
                        shape.fields.append((name, annotation, value))
                elif isinstance(item, ast.Assign) and isinstance(item.targets[0], ast.Name):
                    name = item.targets[0].id
                    if name != "model_config":
                        shape.settings.append((name, ast.unparse(item.value)))
            shapes.append(shape)
    return shapes, aliases


def factory(default: str | None) -> str | None:
    """The default factory a default stands for (`Field(default_factory=X)`, a mutable `[]`)."""
    if default is None:
        return None
    if default.startswith("Field(default_factory="):
        return default.removeprefix("Field(default_factory=").split(",")[0].rstrip(")")
    return "list" if default == "[]" else None


# the three variants, as module source

TURN = '''
_VIEW = []


def turn():
    """The objects a fanout child's tool-calling turn makes (the runtime's, in its order)."""
    if not _VIEW:
        _VIEW.extend([
            Message(role="system", content="You are a worker."),
            Message(role="user", content="Ajoute 1 et 2, puis réponds — 答えて 🙂"),
            Message(role="assistant", tool_calls=(ToolCall(id="c0", name="add", arguments="{}"),)),
            Message(role="tool", tool_call_id="c0", content="1"),
            Message(role="assistant", content="Done."),
        ])
    path, args = "coordinator/worker.1", '{"a": 1, "b": 2}'
    call = ToolCall(id="call_1", name="add", arguments=args)
    reply = Message(role="assistant", content=None, tool_calls=(call,))
    usage = Usage(prompt_tokens=120, completion_tokens=12, total_tokens=132)
    tool = Message(role="tool", tool_call_id="call_1", content="3")
    events = [
        StatusChanged(status="thinking", path=path),
        ContextBuilt(turn=2, kind="Worker", view_messages=5, storage_messages=5, view_tokens=120,
                     storage_tokens=120, from_storage=[0, 0, 5], path=path),
        ModelRequest(turn=2, model="mock", messages=_VIEW, tools=["add"], path=path),
        ModelResponse(turn=2, message=reply, usage=usage, duration=0.001,
                      finish_reason="tool_calls", path=path),
        ToolCallStarted(call_id="call_1", name="add", arguments=args, path=path),
        ToolCallFinished(call_id="call_1", name="add", arguments=args, result="3",
                         duration=0.0001, path=path),
        TaskFinished(child=path, agent="worker", status="done", text="Paris — 巴黎 ✓", turns=3,
                     usage=usage, path="coordinator"),
    ]
    return events, [call, reply, usage, tool]
'''


def head(aliases: dict[str, str], *imports: str) -> list[str]:
    """A variant's first lines: its imports, the type aliases and the registry."""
    return [*imports, *(f"{name} = {value}" for name, value in aliases.items()), "_TYPES = {}"]


def pydantic_source(shapes: list[Shape], aliases: dict[str, str]) -> str:
    """The classes as today: pydantic models, schemas deferred, registered by `type`."""
    out = head(
        aliases,
        "from typing import Annotated, Any, ClassVar, Literal, Union",
        "from pydantic import BaseModel, ConfigDict, Field, TypeAdapter",
    )
    for shape in shapes:
        out.append(f"class {shape.name}({shape.base}):")
        if shape.base == "BaseModel":
            frozen = "frozen=True, " if shape.frozen else ""
            out.append(f"    model_config = ConfigDict({frozen}defer_build=True)")
        out += [f"    {name}: ClassVar[Any] = {value}" for name, value in shape.settings]
        for name, annotation, default in shape.fields:
            out.append(f"    {name}: {annotation}" + ("" if default is None else f" = {default}"))
        if shape.name == "Event":
            out += [
                "    @classmethod",
                "    def __pydantic_init_subclass__(cls, **kwargs):",
                "        super().__pydantic_init_subclass__(**kwargs)",
                "        _TYPES[cls.model_fields['type'].default] = cls",
            ]
    out.append(TURN)
    out.append("""
_adapter = None


def parse(text):
    global _adapter
    if _adapter is None:
        _adapter = TypeAdapter(Annotated[Union[tuple(_TYPES.values())], Field(discriminator="type")])
    return _adapter.validate_json(text)


def dump(event):
    return event.model_dump_json()


def as_dict(event):
    return event.model_dump()


""")
    # a first turn as the runtime makes it today (`_base.messages.built`): no validation,
    # so no schema is built
    first = TURN.replace("def turn():", "def first():")
    names = "|".join(shape.name for shape in shapes)
    out.append(re.sub(rf"\b({names})\(", r"\1.model_construct(", first))
    return "\n".join(out)


def msgspec_source(shapes: list[Shape], aliases: dict[str, str]) -> str:
    """`msgspec.Struct`s: keyword-only, events tagged by `type`."""
    out = head(aliases, "from typing import Any, ClassVar, Literal, Union", "import msgspec.json")
    for shape in shapes:
        if shape.name == "Event":
            # msgspec sets a struct's tag after `__init_subclass__`: `parse` finds the classes
            out.append("class Event(msgspec.Struct, kw_only=True, tag_field='type'):")
        elif shape.base == "Event":
            out.append(f"class {shape.name}(Event, kw_only=True, tag={shape.tag!r}):")
        else:
            frozen = ", frozen=True" if shape.frozen else ""
            out.append(f"class {shape.name}(msgspec.Struct, kw_only=True{frozen}):")
        out += [f"    {name}: ClassVar[Any] = {value}" for name, value in shape.settings]
        for name, annotation, default in shape.fields:
            if name == "type":
                continue
            made = factory(default)
            if made is not None:  # msgspec copies an empty list default for each struct
                default = "[]" if made == "list" else f"msgspec.field(default_factory={made})"
            out.append(f"    {name}: {annotation}" + ("" if default is None else f" = {default}"))
        out.append("    pass")
    out.append(TURN)
    out.append("""
_decoder = None
_encode = msgspec.json.Encoder().encode


def parse(text):
    global _decoder
    if _decoder is None:
        _TYPES.update((cls.__struct_config__.tag, cls) for cls in Event.__subclasses__())
        _decoder = msgspec.json.Decoder(Union[tuple(_TYPES.values())])
    return _decoder.decode(text)


def dump(event):
    return _encode(event)


def as_dict(event):
    return msgspec.to_builtins(event)


def first():
    turn()
""")
    return "\n".join(out)


def slots_source(shapes: list[Shape], aliases: dict[str, str]) -> str:
    """Plain classes with `__slots__` and a keyword-only `__init__` each, as written by hand;
    no validation. Dump: the fields as a dict through `json.dumps`; parse: `json.loads` and the
    class of its `type`."""
    out = [
        "from __future__ import annotations",
        "import json",
        "from typing import Any, Literal",
        "_TYPES = {}",
        "_NEW = object()",
        "class _Slotted:",
        "    __slots__ = ()",
        "    _fields = ()",
        "    _nested = {}",
        "    def as_dict(self):",
        "        out = {'type': self.type} if self.type is not None else {}",
        "        for name in self._fields:",
        "            value = getattr(self, name)",
        "            if isinstance(value, _Slotted):",
        "                value = value.as_dict()",
        "            elif type(value) in (list, tuple) and value and isinstance(value[0], _Slotted):",
        "                value = [item.as_dict() for item in value]",
        "            out[name] = value",
        "        return out",
        "    @classmethod",
        "    def from_dict(cls, data):",
        "        for name, kind in cls._nested.items():",
        "            value = data.get(name)",
        "            if type(value) is dict:",
        "                data[name] = kind.from_dict(value)",
        "            elif type(value) is list:",
        "                data[name] = [kind.from_dict(item) for item in value]",
        "        data.pop('type', None)",
        "        return cls(**data)",
        "    type = None",
    ]
    fields: dict[str, list[tuple[str, str, str | None]]] = {"_Slotted": []}
    for shape in shapes:
        base = "_Slotted" if shape.base == "BaseModel" else shape.base
        own = [field for field in shape.fields if field[0] != "type"]
        every = fields[shape.name] = fields[base] + own
        out.append(f"class {shape.name}({base}):")
        out.append(f"    __slots__ = {tuple(name for name, _, _ in own)!r}")
        out.append(f"    _fields = {tuple(name for name, _, _ in every)!r}")
        nested = {
            name: kind
            for name, annotation, _ in every
            for kind in NESTED
            if re.search(rf"\b{kind}\b", annotation)
        }
        if nested:
            out.append(
                "    _nested = {" + ", ".join(f"{n!r}: {k}" for n, k in nested.items()) + "}"
            )
        out += [f"    {name} = {value}" for name, value in shape.settings]
        if shape.tag is not None:
            out.append(f"    type = {shape.tag!r}")
        if not every:
            continue
        params, body = [], []
        for name, annotation, default in every:
            made = factory(default)
            if made is not None:
                params.append(f"{name}: {annotation} = _NEW")
                body.append(f"        self.{name} = {made}() if {name} is _NEW else {name}")
            else:
                params.append(
                    f"{name}: {annotation}" + ("" if default is None else f" = {default}")
                )
                body.append(f"        self.{name} = {name}")
        out.append(f"    def __init__(self, *, {', '.join(params)}) -> None:")
        out += body
        if shape.name == "Event":
            out += [
                "    def __init_subclass__(cls, **kwargs):",
                "        super().__init_subclass__(**kwargs)",
                "        _TYPES[cls.type] = cls",
            ]
    out.append(TURN)
    out.append("""
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def parse(text):
    data = json.loads(text)
    return _TYPES[data["type"]].from_dict(data)


def dump(event):
    return _encode(event.as_dict())


def as_dict(event):
    return event.as_dict()


def first():
    turn()
""")
    return "\n".join(out)


VARIANTS = {"pydantic": pydantic_source, "msgspec": msgspec_source, "slots": slots_source}


def write_variants(folder: Path) -> None:
    shapes, aliases = read_shapes()
    for name, source in VARIANTS.items():
        (folder / f"ev_{name}.py").write_text(source(shapes, aliases))


# measuring


def context_modules() -> list[str]:
    """What FIRST_RUN imports besides pydantic's family and sagents_nb: what a first run would
    load with any event type."""
    code = f"{FIRST_RUN}\nimport sys; print(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names = [n for n in out.stdout.split() if n.split(".")[0] not in PYDANTIC_FAMILY]
    return [n for n in names if not n.startswith("_") and n not in sys.builtin_module_names]


def in_process(folder: Path, repeat: int) -> dict[str, dict[str, float]]:
    """µs per turn, steady state: constructing, dumping, `model_dump`-like dicts, parsing."""
    sys.path.insert(0, str(folder))
    import importlib

    found: dict[str, dict[str, float]] = {}
    for name in VARIANTS:
        module = importlib.import_module(f"ev_{name}")
        events, _ = module.turn()
        texts = [module.dump(event) for event in events]
        for text in texts:  # the round trip keeps every field
            assert module.dump(module.parse(text)) == text, (name, text)

        def best(stmt: Any, number: int = 200) -> float:
            return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6

        found[name] = {
            "construct": best(module.turn),
            "dump": best(lambda m=module, e=events: [m.dump(x) for x in e]),
            "as_dict": best(lambda m=module, e=events: [m.as_dict(x) for x in e]),
            "parse": best(lambda m=module, t=texts: [m.parse(x) for x in t]),
            "bytes": float(sum(len(t) for t in texts)),
        }
    return found


def processes(folder: Path, rounds: int, callgrind: bool) -> dict[str, dict[str, float]]:
    """Fresh processes over bare Python, interleaved rounds: ms (wall, CPU), medians; with
    `callgrind`, also millions of instructions, one process each under valgrind (the same
    figure every time, whatever the machine's load)."""
    modules = context_modules()
    context = f"import importlib\nfor _m in {modules!r}:\n    try: importlib.import_module(_m)\n"
    context += "    except Exception: pass\n"
    codes = {
        "bare": "pass",
        "pydantic, library": "from pydantic import BaseModel, ConfigDict, Field, TypeAdapter",
        "msgspec, library": "import msgspec, msgspec.json",
        "pydantic, classes": "import ev_pydantic",
        "msgspec, classes": "import ev_msgspec",
        "slots, classes": "import ev_slots",
        "context": context,
        "context + pydantic, first turn as today": context
        + "import ev_pydantic; ev_pydantic.first()",
        "context + pydantic, first turn validated": context
        + "import ev_pydantic; ev_pydantic.turn()",
        "context + msgspec, first turn": context + "import ev_msgspec; ev_msgspec.first()",
        "context + slots, first turn": context + "import ev_slots; ev_slots.first()",
        "context + sagents_nb.events": context + "import sagents_nb.events",
        "FIRST_RUN": FIRST_RUN,
        "FIRST_REQUEST": FIRST_REQUEST,
    }
    env = dict(os.environ, PYTHONPATH=f"{folder}{os.pathsep}{HERE.parent}", PYTHONHASHSEED="0")
    env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")  # bytecode written once, then read
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def one(code: str) -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return wall, cpu

    for code in codes.values():
        one(code)  # bytecode compiled once
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in codes}
    for _ in range(rounds):
        for name, code in codes.items():
            times[name].append(one(code))
    bare_wall = statistics.median(t[0] for t in times["bare"])
    bare_cpu = statistics.median(t[1] for t in times["bare"])
    found = {
        name: {
            "wall": (statistics.median(t[0] for t in runs) - bare_wall) * 1e3,
            "cpu": (statistics.median(t[1] for t in runs) - bare_cpu) * 1e3,
        }
        for name, runs in times.items()
    }
    if callgrind:
        counts = {name: instructions(code, env, folder) for name, code in codes.items()}
        for name, count in counts.items():
            found[name]["instructions"] = (count - counts["bare"]) / 1e6
    del found["bare"]
    return found


def instructions(code: str, env: dict[str, str], folder: Path) -> int:
    """The instructions a process running `code` executes (callgrind's total)."""
    out = folder / "callgrind.out"
    valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    subprocess.run(
        [*valgrind, sys.executable, "-c", code], check=True, env=env, capture_output=True
    )
    summary = next(line for line in out.read_text().splitlines() if line.startswith("summary:"))
    return int(summary.split()[1])


def report(steady: dict[str, dict[str, float]], fresh: dict[str, dict[str, float]]) -> None:
    print("\nA turn's objects (7 events, 4 messages/calls/usages), µs, best of repeats:")
    print(f"{'':10} {'construct':>10} {'dump JSON':>10} {'as dict':>10} {'parse':>10} {'bytes':>7}")
    for name, row in steady.items():
        print(
            f"{name:10} {row['construct']:10.1f} {row['dump']:10.1f} {row['as_dict']:10.1f}"
            f" {row['parse']:10.1f} {row['bytes']:7.0f}"
        )
    clocks = list(fresh["context"])
    print(f"\nFresh processes over bare Python, medians ({' / '.join(clocks)}; ms, M):")
    for name, row in fresh.items():
        print(f"  {name:45}" + " / ".join(f"{row[clock]:7.1f}" for clock in clocks))
    context, today = fresh["context"], fresh["context + pydantic, first turn as today"]
    request = fresh["FIRST_REQUEST"]
    print("\nFIRST_RUN estimated with each over FIRST_REQUEST (measured, minus today's pydantic")
    print("events, plus the alternative's; assumes tools, pausing and tool calls load pydantic")
    print("only on use):")
    for name in ("pydantic, first turn as today", "msgspec, first turn", "slots, first turn"):
        row = fresh[f"context + {name}"]
        ratios = []
        for clock in clocks:
            est = fresh["FIRST_RUN"][clock] - (today[clock] - context[clock])
            ratios.append(f"{clock} {(est + row[clock] - context[clock]) / request[clock]:.2f}x")
        print(f"  {name.split(',')[0]:10} " + "  ".join(ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="interleaved process rounds")
    parser.add_argument("--repeat", type=int, default=7, help="timeit repeats in process")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--callgrind", action="store_true", help="also count instructions")
    args = parser.parse_args()
    import msgspec
    import pydantic

    print(
        f"pydantic {pydantic.VERSION}, msgspec {msgspec.__version__}, Python {sys.version.split()[0]}"
    )
    print(f"load average {os.getloadavg()[0]:.1f} at {time.strftime('%H:%M:%S')}")
    with tempfile.TemporaryDirectory() as folder:
        write_variants(Path(folder))
        steady = in_process(Path(folder), args.repeat)
        fresh = processes(Path(folder), args.rounds, args.callgrind)
    report(steady, fresh)
    print(f"load average {os.getloadavg()[0]:.1f} at {time.strftime('%H:%M:%S')}")
    if args.json:
        print(json.dumps({"steady_us": steady, "fresh_ms": fresh}))


if __name__ == "__main__":
    main()
