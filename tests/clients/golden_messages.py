"""tests/clients/golden_messages.py: the records every golden-capture driver sends.

One rule, repeated by hand in kafkajs_produce.js and sarama/main.go:
record i (0 <= i < COUNT) has key "key-<i>", value "value-<i>-" followed by
"abcdefgh" eight times (compressible, so every codec really compresses), and
the headers client=<client tag>, trace=golden (the same on every record,
because kcat can only add fixed headers). The golden test reads the expected
records from expect.txt, which tests/golden/capture.py writes from this rule.
"""

COUNT = 3


def key(i):
    return "key-%d" % i


def value(i):
    return "value-%d-" % i + "abcdefgh" * 8


def headers(client):
    return [("client", client), ("trace", "golden")]
