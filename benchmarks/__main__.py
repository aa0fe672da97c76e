"""`python -m benchmarks`: run the suite and print the comparison table."""
from benchmarks.run import main

raise SystemExit(main())
