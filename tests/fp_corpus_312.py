"""Syntax that only CPython 3.12+ parses (PEP 701 f-strings, type parameters,
`type` aliases) plus `except*` (3.11+). Checked on every 3.12+ present; the
case `quotes` must equal fp_corpus's `quotes_compat`, written with the old
quoting rules: the quote style never counts."""

# ruff: noqa  (kept exactly as written)


def pep701_same_quotes(d, x):
    return f"{d['k'] + 'a'}{x!r}" + f"{x:{'w'}}"


def pep701_nested(x, items):
    return (
        f"{f'{f"{x}"}'}"
        + f"{'\n'.join(items)}"
        + f"{
            x  # a comment inside
        }"
    )


def pep701_debug_spec(x, w):
    return f"{x = !r:>{w}}" + f"{x:{w}.{w}}" + f"{x:}"


def generic[T: (int, str), *Ts, **P](x: T, *args: *Ts) -> list[T]:
    type Alias[K] = dict[K, T]
    return [x]


class Box[T]:
    def get[U](self, other: U) -> tuple[T, U]:
        return self.item, other


def except_star(job):
    caught = []
    try:
        job()
    except* ValueError as group:
        caught.extend(group.exceptions)
    except* (TypeError, KeyError):
        pass
    return caught


CASES = {
    "quotes": (pep701_same_quotes, {"name": "quotes"}),
    "pep701_nested": (pep701_nested, {}),
    "pep701_debug_spec": (pep701_debug_spec, {}),
    "generic": (generic, {}),
    "Box.get": (Box.get, {}),
    "except_star": (except_star, {}),
}
