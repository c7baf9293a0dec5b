def main() -> None:
    raise SystemExit("jobwire: not yet")
