"""What a model call costs: prices per million tokens, the user's (`prices=`) over those of
`genai-prices` (the `prices` extra), looked up once per model when a cost is read."""

from __future__ import annotations

import math
import threading
from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

from .errors import ConfigurationError

NO_PRICE = "no price"
"""What a cost shows when no table knows the model (never 0)."""
NO_EXTRA = "no price (pip install 'sagents_nb[prices]')"
"""What a cost shows when `genai-prices` is not installed and `prices=` does not name the model."""
USER = "prices="
"""The source of a price the user gave."""
MOCK_MODEL = "mock"
"""`sn.mock_llm`'s model name when none is given: no table prices it, so its price (none) is
known without loading genai-prices' table."""
_LOADED = threading.Event()
"""Set once `warm()`'s thread has imported genai-prices (or found it missing)."""


class Price(NamedTuple):
    """One model's price: US dollars per million tokens, and where the figures come from (a
    named tuple: a frozen dataclass costs ~8x as much to define, with every first run)."""

    input: float
    """Per million prompt tokens."""
    output: float
    """Per million completion tokens."""
    source: str
    """`prices=` for the user's, else the `genai-prices` version, provider and model."""
    table: Any = None
    """genai-prices' own `ModelPrice` (its tiers and cache rates), None for the user's."""

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """What a call with these tokens costs, in US dollars."""
        if self.table is not None:
            from genai_prices import Usage  # the extra, loaded with the first price read

            usage = Usage(input_tokens=prompt_tokens, output_tokens=completion_tokens)
            return float(self.table.calc_price(usage)["total_price"])
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


def checked_prices(prices: Any) -> dict[str, Price]:
    """`prices=` as `Price`s: a mapping of model name to `{"input": ..., "output": ...}`, US
    dollars per million tokens (non-negative numbers).

    Raises:
        ConfigurationError: `prices` has another shape, saying which entry and what it takes.
    """
    if prices is None:
        return {}
    shape = 'e.g. prices={"gpt-4o": {"input": 2.5, "output": 10.0}} (US dollars per million tokens)'
    if not isinstance(prices, Mapping):
        raise ConfigurationError(
            f"prices= takes a dict of model name to price, {shape}; got {prices!r}"
        )
    checked: dict[str, Price] = {}
    for model, price in prices.items():
        if not isinstance(model, str) or not isinstance(price, Mapping):
            raise ConfigurationError(
                f"prices[{model!r}] should be a dict of rates, {shape}; got {price!r}"
            )
        if set(price) != {"input", "output"}:
            raise ConfigurationError(
                f"prices[{model!r}] needs exactly the keys 'input' and 'output', {shape}; "
                f"got {sorted(map(str, price))}"
            )
        rates = [price["input"], price["output"]]
        if not all(_rate(rate) for rate in rates):
            raise ConfigurationError(
                f"prices[{model!r}] rates must be non-negative numbers, {shape}; got {dict(price)!r}"
            )
        checked[model] = Price(float(rates[0]), float(rates[1]), USER)
    return checked


def _rate(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


class PriceBook:
    """The prices a session's costs are read with: the user's first, then `genai-prices`'
    table, each model looked up once (the per-turn path never looks one up).

    Args:
        prices: the user's prices by model (`checked_prices`).
    """

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self.prices = dict(prices or {})
        self._found: dict[str, Price | None] = {}
        self._table: Any = None
        self._looked = False

    def price(self, model: str) -> Price | None:
        """`model`'s price, or None when neither the user nor the table has one."""
        if model in self.prices:
            return self.prices[model]
        if model == MOCK_MODEL:
            return None
        if model not in self._found:
            table = self.table()
            self._found[model] = None if table is None else _table_price(table, model)
        return self._found[model]

    @property
    def loading(self) -> bool:
        """Whether a price from genai-prices' table would load the table now: a view paints
        without it meanwhile, while `warm()` loads it on a thread of its own."""
        return not (self._looked or loaded())

    def waits(self, model: str) -> bool:
        """Whether `price(model)` would load genai-prices' table now (`loading`); if so,
        `warm()` starts loading it on its thread."""
        if model in self.prices or model == MOCK_MODEL or not self.loading:
            return False
        warm()
        return True

    @property
    def missing(self) -> str:
        """What a cost without a price shows: `NO_PRICE`, or `NO_EXTRA` without the extra."""
        return NO_PRICE if self.table() is not None else NO_EXTRA

    def missing_for(self, models: Collection[str]) -> str:
        """What these unpriced models show (`missing`): `NO_PRICE` for the mock's alone, told
        without importing the extra, which would not price it either."""
        if models and all(model == MOCK_MODEL for model in models):
            return NO_PRICE
        return self.missing

    def table(self) -> Any:
        """The `genai_prices` module (imported on first need, once), or None without the extra."""
        if not self._looked:
            self._looked = True
            try:
                import genai_prices  # the `prices` extra, loaded only when a cost is read
            except ImportError:
                pass
            else:
                self._table = genai_prices
        return self._table


def _load() -> None:
    try:
        import genai_prices

        genai_prices.data_snapshot.get_snapshot()  # the table's data, parsed on first use
    except Exception:  # a missing or broken extra is told when a cost is read
        pass
    finally:
        _LOADED.set()


_WARMER = threading.Thread(target=_load, name="sagents_nb-prices", daemon=True)
_WARMING = threading.Lock()


def warm() -> None:
    """Import genai-prices on a thread of its own (once): started by the first price that
    would wait for the table (`PriceBook.waits`), so that a view paints meanwhile."""
    with _WARMING:
        if _WARMER.ident is None:
            _WARMER.start()


def loaded() -> bool:
    """Whether `warm()` is done: genai-prices imported, or found missing."""
    return _LOADED.is_set()


DEFAULT = PriceBook()
"""The book of costs read without a session's prices: genai-prices' table alone."""


_TABLE_PRICES: dict[str, Price | None] = {}
"""genai-prices' price of each model looked up so far, for every book: its table does not
change in a process, and each session (each run of a sweep, say) has a book of its own."""


def _table_price(table: Any, model: str) -> Price | None:
    try:
        return _TABLE_PRICES[model]
    except KeyError:
        found = _TABLE_PRICES[model] = _look_up(table, model)
        return found


def _look_up(table: Any, model: str) -> Price | None:
    try:
        found = table.calc_price(table.Usage(input_tokens=0, output_tokens=0), model_ref=model)
    except LookupError:
        return None
    rates = found.model_price
    source = f"genai-prices {table.__version__} ({found.provider.name} {found.model.id})"
    return Price(_flat(rates.input_mtok), _flat(rates.output_mtok), source, rates)


def _flat(rate: Any) -> float:
    """A rate as one number (a tiered rate's first tier)."""
    if rate is None:
        return 0.0
    base = getattr(rate, "base", rate)
    return float(base)
