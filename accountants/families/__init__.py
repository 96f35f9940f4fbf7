"""Algorithm families: one package per algorithm, each registering itself with :mod:`accountants.registry`.

A family package holds only what its paper adds to the spine (:mod:`accountants.family`): ``params`` (its parameter
model and the rules between fields), ``plan`` (its releases as a mechanism plan), ``privacy`` (the accountants and
calibrations the generic ones cannot give), ``paper`` or ``bounds`` (the paper's own statements and theorems, with
their conditions), ``utility`` (its utility theorems), ``text`` (its wording), ``family`` (the class behind the
protocol), ``simulate`` (its verification-job simulator, registered by id) and ``card.toml`` (title, sources,
assumptions, bounds and examples, as data). NSEG and NISPP (Boob & Guzmán 2023) share one package.
"""
