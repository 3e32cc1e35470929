"""Every consumer that folds events does it through an `events.Fold`; the table of the package's
event classes by consumer has no gap (a new event's gaps fail here, the table in the message)."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Literal

import sagents_nb
from sagents_nb import events
from sagents_nb.events import ErrorOccurred, Event, Fold, _event_classes

from .folds import FOLDS, GAP, HANDLED, IGNORED, gaps, matrix


def package_events() -> list[type[Event]]:
    return [cls for cls in _event_classes() if cls.__module__ == "sagents_nb.events"]


def test_every_package_event_is_handled_or_ignored_by_each_consumer_that_sees_all() -> None:
    table = matrix(package_events())
    print(table)  # pytest -s shows it
    missing = gaps(package_events())
    assert not missing, "event folds with gaps:\n  " + "\n  ".join(missing) + "\n\n" + table


def test_the_table_names_every_fold_of_the_package() -> None:
    for module in pkgutil.walk_packages(sagents_nb.__path__, "sagents_nb."):
        if module.name != "sagents_nb._compare.ray_executor":  # needs Ray
            importlib.import_module(module.name)
    package = {
        fold
        for fold in events._FOLDS
        if any(h.__module__.startswith("sagents_nb.") for h in fold.handlers.values())
    }
    assert package <= set(FOLDS), f"folds missing from tests/folds.py: {package - set(FOLDS)}"
    assert len({fold.consumer for fold in FOLDS}) == len(FOLDS)


def test_a_new_event_shows_as_a_gap_in_a_readable_table() -> None:
    class Unfolded(Event):
        type: Literal["unfolded_probe"] = "unfolded_probe"

    table = matrix([ErrorOccurred, Unfolded])
    lines = table.splitlines()
    assert lines[0].split()[:2] == ["event", "class"]
    error_row = next(line for line in lines if line.startswith("ErrorOccurred"))
    assert HANDLED in error_row and GAP not in error_row
    new_row = next(line for line in lines if line.startswith("Unfolded"))
    assert new_row.count(GAP) == 3  # the view, the Timing tab and the trace see every event
    assert gaps([Unfolded]) == [
        "view: Unfolded",
        "timings: Unfolded",
        "trace: Unfolded",
        "no consumer handles Unfolded",
    ]


def test_a_fold_finds_the_nearest_handled_class_once_and_again_after_a_change() -> None:
    fold: Fold[object] = Fold("probe", ignores={ErrorOccurred})

    class Loud(ErrorOccurred):  # a variant: it keeps its parent's type
        pass

    assert fold.handler(Loud) is None and fold.ignored(Loud)
    assert matrix([Loud], [fold]).splitlines()[1].split() == ["Loud", IGNORED]

    @fold.handles(Event)
    def anything(event: Event) -> str:
        return "any"

    assert fold.handler(Loud) is anything  # the cache was dropped when a handler came

    @fold.handles(ErrorOccurred)
    def error(event: Event) -> str:
        return "error"

    assert fold.handler(Loud) is error and fold.for_type("error") is error
    assert fold.for_type("no_such_type") is None


def test_for_type_follows_a_class_defined_again() -> None:
    fold: Fold[object] = Fold("probe")

    def define() -> type[Event]:
        class Probe(Event):  # as when a notebook cell that defines it runs again
            type: Literal["fold_probe"] = "fold_probe"

        return Probe

    first = define()
    fold.handles(first)(print)
    assert fold.for_type("fold_probe") is print
    second = define()
    assert fold.for_type("fold_probe") is None  # the registry's class is the new one now
    fold.handles(second)(repr)
    assert fold.for_type("fold_probe") is repr
