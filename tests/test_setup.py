"""The one-declaration Setup (htlib.params): every constraint kind, every refusal, the generated
parameters cell, and the executor option."""

from __future__ import annotations

import concurrent.futures as cf
import math
import re
from dataclasses import FrozenInstanceError, dataclass

import numpy as np
import pytest

from htlib import run, sweep
from htlib.experiments import INT_MAX, ParameterError, SetupBase, SweepSetup, param


@dataclass(frozen=True)
class Demo(SetupBase):
    h: int = param(300, "rows", ge=10)
    d: int = param(200, "columns (needs d ≤ h)", ge=10, le=5000)
    n: int = param(5, "a count with a strict upper bound", gt=0, lt=100)
    eta: float = param(0.5, "learning rate", gt=0)
    rho: float = param(0.3, "noise level", ge=0, le=1)
    count: int = param(7, "an unbounded count")
    weight_norm: bool = param(False, "weight normalization")
    readout: str = param("d", "readout convention", choices=("d", "sqrt_d"))
    label: str = param("x, y", "free text")
    etas: tuple[float, ...] = param([0.1, 1.0], "rate grid", gt=0, each=True)
    seeds: tuple[int, ...] = param([0, 1], "seeds", ge=0, max_len=4)
    models: tuple[str, ...] = param(["lenet"], "architectures", choices=("lenet", "minialexnet"))
    extra: tuple[float, ...] = param([], "optional extra points", min_len=0)
    data_dir: str = param("", "a local data folder", is_dir=True)

    def _check(self) -> None:
        if self.d > self.h:
            raise ParameterError(f"parameter 'd' must be ≤ h = {self.h}; got {self.d}")


def test_defaults_are_valid_and_typed():
    s = Demo()
    assert (s.h, s.eta, s.etas, s.extra) == (300, 0.5, (0.1, 1.0), ())
    assert isinstance(s.etas, tuple) and isinstance(s.models, tuple)


@pytest.mark.parametrize("field, value, message", [
    # exact types: bool is not an int, an int field never truncates a float, strings are not numbers
    ("h", True, "parameter 'h' must be an integer ≥ 10; got True"),
    ("h", 2.7, "parameter 'h' must be an integer ≥ 10; got 2.7"),
    ("h", "300", "parameter 'h' must be an integer"),
    ("h", 1e20, "parameter 'h' must be an integer ≥ 10 (integers are limited to"),
    ("count", 10**20, "parameter 'count' must be an integer (integers are limited to ±1e+09)"),
    ("count", -10**10, "limited to"),
    ("h", float("inf"), "parameter 'h' must be an integer"),
    ("h", float("nan"), "parameter 'h' must be an integer"),
    ("eta", float("inf"), "parameter 'eta' must be a finite number > 0; got inf"),
    ("eta", float("nan"), "parameter 'eta' must be a finite number > 0; got nan"),
    ("eta", -math.inf, "must be a finite number"),
    ("eta", False, "parameter 'eta' must be a finite number > 0; got False"),
    ("eta", "fast", "parameter 'eta' must be a finite number"),
    ("weight_norm", 1, "parameter 'weight_norm' must be True or False; got 1"),
    ("readout", "sqrt", "parameter 'readout' must be a string in {\"d\", \"sqrt_d\"}; got 'sqrt'"),
    ("readout", 1, "must be a string"),
    # bounds of every kind
    ("h", 9, "must be an integer ≥ 10; got 9"),
    ("d", 5001, "must be an integer ≥ 10, ≤ 5000; got 5001"),
    ("n", 0, "must be an integer > 0, < 100; got 0"),
    ("n", 100, "must be an integer > 0, < 100; got 100"),
    ("eta", 0, "must be a finite number > 0; got 0"),
    ("rho", 1.0000001, "must be a finite number ≥ 0, ≤ 1"),
    ("rho", -1e-12, "≥ 0, ≤ 1"),
    # lists: non-empty unless declared, element types and bounds, lengths, element choices
    ("etas", [], "parameter 'etas' must be a list of at least 1 numbers; got []"),
    ("etas", 0.1, "parameter 'etas' must be a list of numbers; got 0.1"),
    ("etas", "0.1", "must be a list of numbers"),
    ("etas", [0.1, -1.0], "parameter 'etas' must be a list of numbers, each > 0; got [0.1, -1.0]"),
    ("etas", [0.1, float("inf")], "each > 0; got [0.1, inf]"),
    ("etas", [0.1, float("nan")], "each > 0"),
    ("etas", [True], "each > 0"),
    ("seeds", [0, 1.5], "parameter 'seeds' must be a list of integers, each ≥ 0; got [0, 1.5]"),
    ("seeds", [0, 1, 2, 3, 4], "must be a list of 1 to 4 integers"),
    ("seeds", [-1], "each ≥ 0"),
    ("models", ["lenet", "vgg"], "each in {\"lenet\", \"minialexnet\"}; got ['lenet', 'vgg']"),
    ("data_dir", "/nonexistent/folder", "parameter 'data_dir' must be \"\" or an existing directory"),
    # the cross-field hook
    ("d", 400, "parameter 'd' must be ≤ h = 300; got 400"),
])
def test_refusals_name_the_parameter_the_value_and_what_is_allowed(field, value, message):
    with pytest.raises(ParameterError) as info:
        Demo(**{field: value})
    assert message in str(info.value)


@pytest.mark.parametrize("field, value, stored", [
    ("h", 10, 10),                      # bounds are inclusive where declared so
    ("h", 1e4, 10_000),                 # an integral float is the integer it names
    ("h", np.int64(12), 12),
    ("count", INT_MAX, INT_MAX),
    ("count", -INT_MAX, -INT_MAX),
    ("d", 5000, None),
    ("eta", 2, 2.0),                    # a float field takes an int
    ("rho", 0, 0.0), ("rho", 1, 1.0),
    ("n", 99, 99), ("n", 1, 1),
    ("etas", [1, 2], (1.0, 2.0)),
    ("seeds", (0, 1, 2, 3), (0, 1, 2, 3)),
    ("extra", [], ()),
    ("models", ["minialexnet", "lenet"], ("minialexnet", "lenet")),
    ("weight_norm", np.bool_(True), True),
])
def test_accepted_values_are_stored_in_the_field_type(field, value, stored):
    kwargs = {field: value}
    if field == "d":
        kwargs["h"] = 5000
    if field == "h":
        kwargs["d"] = 10
    s = Demo(**kwargs)
    got = getattr(s, field)
    assert got == (value if stored is None else stored)
    assert type(got) is type(Demo.__dataclass_fields__[field].default)


def test_is_dir_takes_an_existing_folder(tmp_path):
    assert Demo(data_dir=str(tmp_path)).data_dir == str(tmp_path)
    (tmp_path / "f").write_text("x")
    with pytest.raises(ParameterError, match="existing directory"):
        Demo(data_dir=str(tmp_path / "f"))


def test_frozen_hashable_and_equal_by_value():
    a, b = Demo(etas=[0.1, 1.0]), Demo(etas=(0.1, 1))
    assert a == b and hash(a) == hash(b) and len({a, b, Demo(h=400)}) == 2
    with pytest.raises(FrozenInstanceError):
        a.h = 5


def test_replace_validates_and_refuses_unknown_names():
    s = Demo().replace(h=1000, d=900)
    assert (s.h, s.d) == (1000, 900)
    with pytest.raises(ParameterError, match="parameter 'd' must be ≤ h = 300"):
        Demo().replace(d=400)
    with pytest.raises(ParameterError, match="unknown parameter 'hh'") as info:
        Demo().replace(hh=3)
    assert "valid parameters" in str(info.value) and "h: int = 300 [≥ 10]  rows" in str(info.value)


def test_differs_from_default_lists_only_the_changes_as_literals():
    assert Demo().differs_from_default() == {}
    assert Demo(etas=[2.0], h=301).differs_from_default() == {"h": 301, "etas": [2.0]}
    assert Demo(eta=0.5).differs_from_default() == {}  # the default, given again


def test_parameters_listing():
    specs = {p.name: p for p in Demo.parameters()}
    assert list(specs)[:3] == ["h", "d", "n"]
    assert specs["d"].type_name == "int" and specs["d"].constraint == "≥ 10, ≤ 5000"
    assert specs["etas"].type_name == "list[float]" and specs["etas"].default == [0.1, 1.0]
    assert specs["etas"].constraint == "each > 0"
    assert specs["seeds"].constraint == "each ≥ 0, 1 to 4 entries"
    assert specs["readout"].constraint == 'in {"d", "sqrt_d"}'
    assert specs["count"].constraint == "" and specs["label"].description == "free text"
    assert "  eta: float = 0.5 [> 0]  learning rate" in Demo.listing().splitlines()


def test_parameters_cell_round_trip():
    cell = Demo.parameters_cell()
    assert cell.splitlines()[0] == "h: int = 300                     # rows [≥ 10]"
    assert 'readout: str = "d"' in cell and "etas: list[float] = [0.1, 1.0]" in cell
    assert "extra: list[float] = []" in cell
    ns: dict = {}
    exec(cell, ns)
    assert Demo.from_namespace(ns) == Demo()
    ns["h"], ns["etas"] = 400, [3.0]  # what papermill injects after the cell
    assert Demo.from_namespace(ns) == Demo(h=400, etas=(3.0,))


def test_parameters_cell_parses_for_papermill_without_warnings(caplog):
    """Papermill reads the cell line by line; an '=' in a comment made it skip the parameter."""
    import nbformat
    from papermill.translators import PythonTranslator

    cell = nbformat.v4.new_code_cell(Demo.parameters_cell())
    with caplog.at_level("WARNING", logger="papermill"):
        found = PythonTranslator.inspect(cell)
    assert [p.name for p in found] == [p.name for p in Demo.parameters()] and not caplog.records
    assert {p.name: p.inferred_type_name for p in found}["etas"] == "list[float]"


def test_from_namespace_refuses_a_stale_cell():
    ns: dict = {}
    exec(Demo.parameters_cell(), ns)
    del ns["rho"]
    with pytest.raises(ParameterError, match=r"does not define \['rho'\]"):
        Demo.from_namespace(ns)


def test_declarations_are_checked():
    @dataclass(frozen=True)
    class Eq(SetupBase):
        x: int = param(1, "x = 1 is the default")

    with pytest.raises(TypeError, match="may not contain '='"):
        Eq.parameters()

    @dataclass(frozen=True)
    class Bare(SetupBase):
        x: int = 1

    with pytest.raises(TypeError, match="must be declared with param"):
        Bare()

    @dataclass(frozen=True)
    class Listy(SetupBase):
        x: list = param([1], "a list annotation")

    with pytest.raises(TypeError, match="is not one of"):
        Listy()

    @dataclass(frozen=True)
    class Each(SetupBase):
        x: int = param(1, "scalar", ge=0, each=True)

    with pytest.raises(TypeError, match="each=True needs a tuple"):
        Each()


def test_parameter_error_is_the_one_of_htlib_run():
    assert run.ParameterError is ParameterError and issubclass(ParameterError, ValueError)


# --------------------------------------------------------------------------- the executor option


@pytest.mark.parametrize("value", ["serial", "process", "tcp://127.0.0.1:8786", "tcp://scheduler.local:1",
                                   "tcp://[::1]:65535", "tcp://node-3.cluster:8786"])
def test_executor_accepts_serial_process_and_dask_addresses(value):
    assert SweepSetup(executor=value).executor == value


@pytest.mark.parametrize("value", ["threads", "", "tcp://host", "tcp://host:0", "tcp://host:70000",
                                   "http://host:8786", "tcp://:8786", "tcp://ho st:8786", "Process"])
def test_executor_refuses_anything_else(value):
    with pytest.raises(ParameterError, match=r"parameter 'executor' must be \"serial\", \"process\" or a Dask"):
        SweepSetup(executor=value)


def test_sweep_fields_come_last_in_a_chapter_setup():
    @dataclass(frozen=True)
    class Chapter(SweepSetup):
        h: int = param(10, "rows", ge=1)

    assert [p.name for p in Chapter.parameters()] == ["h", "executor", "workers"]
    with pytest.raises(ParameterError, match="parameter 'workers' must be an integer ≥ 1, ≤ 256; got 0"):
        Chapter(workers=0)


def test_executor_context_serial_and_process():
    with SweepSetup(executor="serial").executor_context() as pool:
        assert pool is None
    with SweepSetup(executor="process", workers=1).executor_context() as pool:
        assert isinstance(pool, cf.ProcessPoolExecutor)
        assert sweep.run_sweep(abs, [-2, 3], executor=pool, use_cache=False, progress=False) == [2, 3]
    with pytest.raises(RuntimeError):  # closed on exit
        pool.submit(abs, 1)


def test_executor_for_dask_connects_and_closes_the_client():
    import distributed
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        with sweep.executor_for(cluster.scheduler_address) as pool:
            assert sweep.run_sweep(abs, [-2, 3], executor=pool, use_cache=False, progress=False) == [2, 3]
            client = pool._client
        assert client.status == "closed"
        assert sweep.dask_workers(cluster.scheduler_address) == 1


def test_dask_workers_of_a_dead_address_is_a_connection_error():
    import distributed  # noqa: F401
    with pytest.raises(ConnectionError, match="no Dask scheduler answers at tcp://127.0.0.1:9"):
        sweep.dask_workers("tcp://127.0.0.1:9", timeout=1)


# ----------------------------------------------------------------------------- costs: memory and time bounds


@dataclass(frozen=True)
class Costly(SetupBase):
    n: int = param(1000, "rows")
    d: int = param(100, "columns")
    steps: int = param(10, "steps")

    def costs(self):
        from htlib.params import Cost
        return [Cost("the runs", ("n", "d", "steps"), memory=8.0 * self.n * self.d,
                     seconds=1e-6 * self.n * self.d * self.steps)]


def test_a_setup_whose_cost_exceeds_a_limit_is_refused_naming_the_parameter_and_its_largest_fitting_value():
    from htlib.params import MEMORY_LIMIT, TIME_LIMIT
    assert Costly().n == 1000
    with pytest.raises(ParameterError, match=r"parameter 'n'") as err:
        Costly(n=10**9)
    fit = int(re.search(r"n must be at most (\d+)", str(err.value)).group(1))
    # the largest n by the cost's own arithmetic: memory 8 n d <= MEMORY_LIMIT and time 1e-6 n d steps <= TIME_LIMIT
    expected = min(MEMORY_LIMIT // (8 * 100), int(TIME_LIMIT / (1e-6 * 100 * 10)))
    assert fit == expected
    Costly(n=fit)
    with pytest.raises(ParameterError):
        Costly(n=fit + 1)
    with pytest.raises(ParameterError, match=r"parameter 'steps'") as err:
        Costly(n=100_000, steps=10**8)  # steps grew most over its default: it is the one named
    assert int(re.search(r"steps must be at most (\d+)", str(err.value)).group(1)) == int(TIME_LIMIT / (1e-6 * 1e5 * 100))
