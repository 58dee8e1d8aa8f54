def describe(answer):
    return "answer=%d" % answer
