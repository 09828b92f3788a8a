"""The one-name face of a chapter package: ``ch.X`` finds ``X`` in the chapter's ``compute``, ``measures`` or ``reading``."""

from __future__ import annotations

from types import ModuleType
from typing import Callable


def chapter_getattr(*modules: ModuleType) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` showing the names of ``modules``; the first that defines a name wins."""

    def __getattr__(name: str) -> object:
        if not (name.startswith("__") and name.endswith("__")):
            for module in modules:
                if name in vars(module):
                    return vars(module)[name]
        raise AttributeError(f"none of {[m.__name__ for m in modules]} defines {name!r}")

    def __dir__() -> list[str]:
        return sorted({n for m in modules for n in vars(m) if not n.startswith("__")} | {m.__name__.rpartition(".")[2]
                                                                                          for m in modules})

    return __getattr__, __dir__
