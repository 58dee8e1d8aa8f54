"""pyconn: a test connector whose only job is to import its dependency."""

import tinypkg

from helpers import describe

if __name__ == "__main__":
    print(describe(tinypkg.ANSWER))
