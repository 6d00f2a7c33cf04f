"""`python -m tuner` runs the command line."""

from tuner.cli import main

main()
