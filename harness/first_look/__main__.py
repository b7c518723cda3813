"""`python -m harness.first_look`: the first look's claims on recorded traffic, and their report."""
from harness.first_look import main

raise SystemExit(main())
