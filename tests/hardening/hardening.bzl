"""One hardening cc_test per concurrency model, like the integration suite.

hardening_tests(name = "resources", srcs = [...]) makes resources_prefork,
resources_threadpool and resources_async (each run with --model=<model> and
the real gearboxd in its runfiles) plus a test_suite `resources`. The tests are
slow and timing-sensitive: tagged "hardening" (run them alone with
--test_tag_filters=hardening) and "exclusive" (no other test shares the CPUs).
"""

load("//:copts.bzl", "GEARBOX_COPTS")
load("//tests/integration:models.bzl", "MODELS")

def hardening_tests(name, srcs, size = "large", models = MODELS):
    tests = []
    for model in models:
        test_name = "%s_%s" % (name, model)
        native.cc_test(
            name = test_name,
            size = size,
            srcs = srcs,
            deps = [
                ":hardening_lib",
                "@gtest",
            ],
            copts = GEARBOX_COPTS,
            args = ["--model=%s" % model],
            data = ["//daemon:gearboxd"],
            tags = [
                "exclusive",
                "hardening",
            ],
        )
        tests.append(":" + test_name)
    native.test_suite(
        name = name,
        tests = tests,
        tags = ["hardening"],
    )
