"""A tiny dependency for the pyconn test connector."""

ANSWER = 42


def greet(name):
    return "hello, " + name
