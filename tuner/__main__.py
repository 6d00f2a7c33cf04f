"""`python -m tuner` runs the command line."""

from tuner.cli import main

if __name__ == "__main__":  # not when multiprocessing's spawn re-imports it (tuner probe)
    main()
