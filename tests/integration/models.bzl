"""The concurrency models the integration suite runs under: one test target each.

MODELS is the single list (it must equal gearbox::ModelNames() from
//models:registry, in table order; //tests/integration:models_list_test checks).
Adding a model to the daemon means adding its name here, nothing else.
"""

load("//:copts.bzl", "GEARBOX_COPTS")

MODELS = [
    "prefork",
    "threadpool",
    "async",
]

def integration_tests(name, srcs, deps, data = [], models = MODELS, **kwargs):
    """One cc_test per model, `<name>_<model>`, plus a test_suite `<name>`.

    Each test binary gets `--model=<model>` as an argument and the real gearboxd
    as a data dependency (found through the runfiles at daemon/gearboxd).

    Args:
      name: prefix of the generated targets and name of the test_suite.
      srcs: test sources (they provide main() and read --model=).
      deps: libraries the tests need.
      data: extra runtime files, besides //daemon:gearboxd.
      models: the models to generate targets for (default: all of MODELS).
      **kwargs: passed to every cc_test.
    """
    tests = []
    for model in models:
        test_name = "%s_%s" % (name, model)
        native.cc_test(
            name = test_name,
            size = "medium",
            srcs = srcs,
            deps = deps,
            copts = GEARBOX_COPTS,
            args = ["--model=%s" % model],
            data = ["//daemon:gearboxd"] + data,
            tags = ["integration"],
            **kwargs
        )
        tests.append(":" + test_name)
    native.test_suite(
        name = name,
        tests = tests,
        tags = ["integration"],
    )
