"""The logging configuration the service applies (estimator.service.logsetup.configure):
component-base's logging options plus klog's own flags, as the command line parsed them, and
component-base's check of them against the feature gates. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from estimator.core.featuregates import FeatureGates


@dataclass
class LogOptions:
    """component-base's logging configuration plus klog's own flags, as parsed."""

    format: str = "text"
    verbosity: int = 0
    vmodule: list[tuple[str, int]] = field(default_factory=list)
    flush_frequency: float = 5.0
    split_stream: bool = False
    info_buffer_size: int = 0
    # klog
    logtostderr: bool = True
    alsologtostderr: bool = False
    log_dir: str = ""
    log_file: str = ""
    log_file_max_size_mb: int = 1800
    stderrthreshold: int = 2  # ERROR
    alsologtostderrthreshold: int = 0  # INFO (klog v2.140, Karmada v1.19)
    legacy_stderr_threshold: bool = True  # --legacy_stderr_threshold_behavior (klog v2.140, Karmada v1.19)
    skip_headers: bool = False
    add_dir_header: bool = False
    backtrace_at: tuple[str, int] | None = None

    def validate(
        self, gates: FeatureGates, *, text_split: bool, text_buffer: int, json_split: bool, json_buffer: int
    ) -> list[str]:
        """component-base's ValidateAndApply: the format must exist and be allowed by its gate,
        split streams and buffers need LoggingAlphaOptions. Returns error strings naming fields."""
        errors = []
        if self.format not in ("text", "json"):
            errors.append(f'--logging-format: format: Invalid value: "{self.format}": Unsupported log format')
        elif self.format == "json" and not gates.enabled("LoggingBetaOptions"):
            errors.append(
                "--logging-format: format: Forbidden: Log format json is disabled, see LoggingBetaOptions feature"
            )
        if not gates.enabled("LoggingAlphaOptions"):
            for given, flag, name in (
                (text_split, "--log-text-split-stream", "options.text.splitStream"),
                (text_buffer, "--log-text-info-buffer-size", "options.text.infoBufferSize"),
                (json_split, "--log-json-split-stream", "options.json.splitStream"),
                (json_buffer, "--log-json-info-buffer-size", "options.json.infoBufferSize"),
            ):
                if given:
                    errors.append(f"{flag}: {name}: Forbidden: Feature LoggingAlphaOptions is disabled")
        if self.format == "json":
            self.split_stream, self.info_buffer_size = json_split, json_buffer
        else:
            self.split_stream, self.info_buffer_size = text_split, text_buffer
        return errors
