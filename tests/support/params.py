"""Parameter sets that more than one test file uses, each named after the configuration or experiment it comes from.

Tests extend them with ``|`` (``MNIST | {"noise_multiplier": 1.1}``) rather than copying them, so a configuration is
typed once.

The anchors a1–a4 (Poisson-subsampled Gaussian DP-SGD) and b1–b3 (Gaussian) are the configurations on which the
established libraries (opacus, dp_accounting, prv-accountant, TF-Privacy) agree, with the values they agree on; the
tests that use them say which library or closed form each value comes from.
"""

# dp-sgd: MNIST, 60 epochs of batches of 256 out of 60,000 (anchor a1, with noise multiplier 1.1)
MNIST = {"dataset_size": 60000, "batch_size": 256, "epochs": 60}

# dp-sgd-last-iterate: Kong & Ribero 2024's Figure 1 problem (n = 10⁴, b = 10, λ = 1e-5, C = 10, M = 1)
LAST_ITERATE_FIG1 = {"dataset_size": 10**4, "batch_size": 10, "stepsize": 1e-5, "clip_norm": 10.0, "smoothness": 1.0}

# dp-sgd-last-iterate: the small linear problem verification jobs run in well under a second per block
LAST_ITERATE_SMALL = {
    "dataset_size": 20,
    "batch_size": 2,
    "steps": 50,
    "stepsize": 0.1,
    "clip_norm": 1.0,
    "smoothness": 1.0,
    "weak_convexity": 0.0,
    "clipping": "inactive",
    "noise_multiplier": 2.0,
}

# nseg / nispp: a bilinear saddle point (d₁ = d₂ = 5, balls of radius 1, M = √2 + 1)
NSEG_BILINEAR = {"lipschitz": 2.414, "smoothness": 1.0, "diameter": 2.828, "dimension": 10}

# phased-output-perturbation: the deterministic test vectors of an independent prototype of the paper's formulas (ε = 1, δ = 1e-5), one per problem class
POP_TEST_VECTORS = {
    "strongly-convex": {
        "problem_class": "strongly-convex",
        "dataset_size": 10000,
        "dimension": 10,
        "lipschitz": 1.0,
        "strong_convexity": 0.1,
        "smoothness": 1.0,
    },
    "convex": {"problem_class": "convex", "dataset_size": 4096, "dimension": 10, "lipschitz": 1.0, "diameter": 1.0},
    "sc-sc": {
        "problem_class": "sc-sc",
        "dataset_size": 10000,
        "dimension": 5,
        "lipschitz": 1.0,
        "strong_convexity_x": 0.1,
        "strong_convexity_y": 0.2,
        "smoothness": 1.0,
    },
    "c-c": {"problem_class": "c-c", "dataset_size": 4096, "dimension": 5, "lipschitz": 1.0, "diameter": 1.0},
    "c-sc": {
        "problem_class": "c-sc",
        "dataset_size": 4096,
        "dimension": 5,
        "lipschitz": 1.0,
        "diameter": 1.0,
        "strong_convexity_y": 0.5,
    },
}

# phased-output-perturbation: the problems its simulators run (E1–E5, at small n)
POP_SIMULATED = {
    "strongly-convex": {
        "problem_class": "strongly-convex",
        "dataset_size": 500,
        "dimension": 6,
        "lipschitz": 1.0,
        "strong_convexity": 0.5,
        "smoothness": 0.5,
    },
    "convex": {"problem_class": "convex", "dataset_size": 512, "dimension": 4, "lipschitz": 1.6, "diameter": 1.0},
    "sc-sc": {
        "problem_class": "sc-sc",
        "dataset_size": 500,
        "dimension_x": 4,
        "dimension_y": 3,
        "lipschitz": 8.0,
        "strong_convexity_x": 0.5,
        "strong_convexity_y": 1.0,
        "smoothness": 1.5,
    },
    "c-c": {"problem_class": "c-c", "dataset_size": 512, "dimension": 3, "lipschitz": 2.5, "diameter": 1.0},
    "c-sc": {
        "problem_class": "c-sc",
        "dataset_size": 512,
        "dimension": 3,
        "lipschitz": 2.6,
        "diameter": 1.0,
        "strong_convexity_y": 0.5,
    },
}
POP_E1 = POP_SIMULATED["strongly-convex"]

# dp-bilevel: the problem constants of an independent prototype of the paper's formulas (λ = 20, η = 0.25, μ_g = 1, (L0f, L1f, L0g, L1g, L2g) = (5, 1, 6, 2, 0))
BILEVEL_CONSTANTS = {
    "regularization": 20.0,
    "stepsize": 0.25,
    "strong_convexity": 1.0,
    "lipschitz_f": 5.0,
    "smoothness_f": 1.0,
    "lipschitz_g": 6.0,
    "smoothness_g": 2.0,
    "hessian_lipschitz_g": 0.0,
}
# dp-bilevel: the reference configuration of an independent prototype of the paper's formulas (n = 1e5, d = 10, T = 30, K = 2000, G = 50)
BILEVEL_REFERENCE = {
    "dataset_size": 100000,
    "dimension_x": 10,
    "dimension_y": 10,
    "steps": 30,
    "inner_steps": 2000,
    **BILEVEL_CONSTANTS,
    "outer_clip_norm": 50.0,
}
BILEVEL_MINI_BATCH = {"variant": "mini-batch", "batch_size_inner": 1000, "batch_size_outer": 5000}

# private-mirror-descent: the largest configuration of an independent prototype of the paper's formulas (d₁ = d₂ = 32, n = 32000, B = 12, L₀ = L₁ = 1, L₂ = 0; δ = 1/n²)
MIRROR_GAME = {
    "variant": "second-order",
    "dataset_size": 32000,
    "dimension_x": 32,
    "dimension_y": 32,
    "lipschitz": 1.0,
    "smoothness": 1.0,
    "second_order_smoothness": 0.0,
    "batch_size": 12,
}
MIRROR_DELTA = 1 / 32000**2
