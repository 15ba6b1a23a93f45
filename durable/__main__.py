"""`python -m durable`: the same as the `durable` command."""

from ._cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
