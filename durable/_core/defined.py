"""What defines a class made at run time (DESIGN §2 "Identity of a call"):
a class without a `class` statement of its module (`Enum("Labels", names)`,
pydantic's `create_model`, a model a factory makes) counts by its code and
its immutable constants (`code.class_stamp`), which say nothing of its
members, fields or annotations: two schemas made from other settings were
one argument, and a step asked with the second was served the first's
answer. They count by content here, each by its own walk (`LeftOut`: by
type when it has no digest, a `ForwardRef`'s code). Likewise a module
the program made (`imports.run_time_module`), which a library's name would stand
for: its data counts (`content._module`)."""

from __future__ import annotations

import enum
from typing import Any

from .ownstate import LeftOut

# Where the class-making helpers keep a class's definition: annotations,
# dataclass, pydantic and attrs fields, a NamedTuple's defaults, a
# TypedDict's keys, pydantic's settings.
_DEFINING = (
    "__annotations__", "__dataclass_fields__", "__pydantic_fields__", "__attrs_attrs__",
    "_field_defaults", "__required_keys__", "__optional_keys__", "model_config",
)  # fmt: skip


def defined(cls: type) -> list[tuple[str, LeftOut]] | None:
    """The parts of `cls`'s own namespace that define it, and an Enum's
    members by name and value (aliases too); None when it has none."""
    own = vars(cls)
    found = [(name, LeftOut(own[name])) for name in _DEFINING if name in own]
    if isinstance(cls, enum.EnumMeta):
        listed: Any = cls.__members__
        members = [(name, m._value_) for name, m in listed.items()]
        found.append(("members", LeftOut(members)))
    return found or None

