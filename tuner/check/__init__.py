from tuner.check.core import *  # noqa: F401,F403
from tuner.check.core import check_space, CheckReport, CheckItem  # noqa: F401
