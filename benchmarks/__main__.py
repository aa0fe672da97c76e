"""`python -m benchmarks`: run the suite and print the comparison table."""

from benchmarks.run import main

if __name__ == "__main__":
    raise SystemExit(main())
