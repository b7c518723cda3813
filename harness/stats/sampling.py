"""The order a claim draws its queries in. Every interval assumes its queries are a random sample of the set; a
sequential claim's first look uses only its first queries, so they must not be the first topics of the file.
`ordered` sorts by id (natural order: "q2" before "q10"; or keeps the file's order, `key=None`) and, for
`order="random"`, applies a permutation seeded by `seed` to that list, so the order depends only on the ids and the
seed (both arms of a pair draw the same order; the report records the seed)."""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

ORDERS = ("random", "natural")
T = TypeVar("T")


def natural_key(key: str) -> list[Any]:
    """Sort key that orders embedded numbers by value ("q2" < "q10")."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", key)]


def ordered(items: Sequence[T], order: str, seed: int, *, key: Callable[[T], str] | None = str) -> list[T]:
    """`items` sorted by `key` in natural order (`key=None`: as given), then (order "random") permuted by numpy's
    default_rng(seed)."""
    if order not in ORDERS:
        raise ValueError(f"unknown query order {order!r}; expected one of {ORDERS}")
    out = list(items) if key is None else sorted(items, key=lambda x: natural_key(key(x)))
    if order == "random":
        perm = np.random.default_rng(seed).permutation(len(out))
        out = [out[int(i)] for i in perm]
    return out


def describe(order: str, seed: int) -> dict[str, Any]:
    """What a report row records about the order its queries were drawn in."""
    return {"order": order, "seed": seed if order == "random" else None}
