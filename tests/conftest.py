"""Settings for the whole suite."""

from hypothesis import HealthCheck, settings

# Hypothesis' per-example deadline and its "too slow" health check are wall-clock
# assertions: on a loaded 2-core CI box one stalled example failed a run that checks no
# timing. Properties here are about answers; speed is judged in benchmarks/.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")
