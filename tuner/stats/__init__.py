from tuner.stats.core import *  # noqa: F401,F403
