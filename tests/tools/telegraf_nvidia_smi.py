#!/usr/bin/env python3
"""Turns one `nvidia-smi -q -x` capture into the line protocol Telegraf's
inputs.nvidia_smi plugin sends for it, as /work/shared/data/real/SOURCES.md
section 1 describes: measurements nvidia_smi, nvidia_smi_mig (v12+) and
nvidia_smi_process (v12+); tags and fields named as Telegraf names them; units
stripped; `N/A` and "deprecated" values dropped; integers with the `i` suffix.

Differences from a live agent, for determinism: the `host` tag is `test-host`,
and the timestamp is the XML <timestamp> read as UTC (Telegraf reads it in the
agent's local zone, and the v11 parser uses the gather time), or 2023-01-01
00:00:00 UTC when the capture has none.

Usage: telegraf_nvidia_smi.py FILE.xml > out.lp   (standard library only)
"""

import calendar
import re
import sys
import time
import xml.etree.ElementTree as ET

FALLBACK_TIME_S = 1672531200  # 2023-01-01T00:00:00Z
NOT_AVAILABLE = ("", "N/A", "Requested functionality has been deprecated")

# (field, type, [paths under <gpu>, "/" = under the root], minimum schema).
# When several paths give a usable value the last one wins, as in Telegraf,
# where each later setter overwrites the map entry.
GPU_FIELDS = [
    ("driver_version", "str", ["/driver_version"], 11),
    ("cuda_version", "str", ["/cuda_version"], 11),
    ("serial", "str", ["serial"], 11),
    ("vbios_version", "str", ["vbios_version"], 11),
    ("display_active", "str", ["display_active"], 11),
    ("display_mode", "str", ["display_mode"], 11),
    ("current_ecc", "str", ["ecc_mode/current_ecc"], 11),
    ("retired_pages_blacklist", "str", ["retired_pages/pending_blacklist"], 11),
    ("retired_pages_pending", "str", ["retired_pages/pending_retirement"], 11),
    ("remapped_rows_pending", "str", ["remapped_rows/remapped_row_pending"], 11),
    ("remapped_rows_failure", "str", ["remapped_rows/remapped_row_failure"], 11),
    ("ecc_errors_aggregate_sram_threshold_exceeded", "str",
     ["ecc_errors/aggregate/sram_threshold_exceeded"], 13),
    ("ecc_errors_channel_repair_pending", "str", ["ecc_errors/channel_repair_pending"], 13),
    ("ecc_errors_tpc_repair_pending", "str", ["ecc_errors/tpc_repair_pending"], 13),
    ("ecc_errors_unrepairable_memory", "str", ["ecc_errors/unrepairable_memory"], 13),
    ("fan_speed", "int", ["fan_speed"], 11),
    ("memory_total", "int", ["fb_memory_usage/total"], 11),
    ("memory_used", "int", ["fb_memory_usage/used"], 11),
    ("memory_free", "int", ["fb_memory_usage/free"], 11),
    ("memory_reserved", "int", ["fb_memory_usage/reserved"], 11),
    ("retired_pages_multiple_single_bit", "int",
     ["retired_pages/multiple_single_bit_retirement/retired_count"], 11),
    ("retired_pages_double_bit", "int", ["retired_pages/double_bit_retirement/retired_count"], 11),
    ("remapped_rows_correctable", "int", ["remapped_rows/remapped_row_corr"], 11),
    ("remapped_rows_uncorrectable", "int", ["remapped_rows/remapped_row_unc"], 11),
    ("temperature_gpu", "int", ["temperature/gpu_temp"], 11),
    ("temperature_memory", "int", ["temperature/memory_temp"], 12),
    ("temperature_gpu_target", "int", ["temperature/gpu_target_temperature"], 12),
    ("temperature_gpu_target_min", "int", ["temperature/gpu_target_temperature_min"], 12),
    ("temperature_gpu_target_max", "int", ["temperature/gpu_target_temperature_max"], 12),
    ("temperature_max_threshold", "int", ["temperature/gpu_temp_max_threshold"], 12),
    ("temperature_slow_threshold", "int", ["temperature/gpu_temp_slow_threshold"], 12),
    ("temperature_max_gpu_threshold", "int", ["temperature/gpu_temp_max_gpu_threshold"], 12),
    ("temperature_max_mem_threshold", "int", ["temperature/gpu_temp_max_mem_threshold"], 12),
    ("temperature_gpu_tlimit", "int", ["temperature/gpu_temp_tlimit"], 13),
    ("temperature_max_tlimit_threshold", "int", ["temperature/gpu_temp_max_tlimit_threshold"], 13),
    ("temperature_slow_tlimit_threshold", "int",
     ["temperature/gpu_temp_slow_tlimit_threshold"], 13),
    ("temperature_max_gpu_tlimit_threshold", "int",
     ["temperature/gpu_temp_max_gpu_tlimit_threshold"], 13),
    ("temperature_max_mem_tlimit_threshold", "int",
     ["temperature/gpu_temp_max_mem_tlimit_threshold"], 13),
    ("utilization_gpu", "int", ["utilization/gpu_util"], 11),
    ("utilization_memory", "int", ["utilization/memory_util"], 11),
    ("utilization_encoder", "int", ["utilization/encoder_util"], 11),
    ("utilization_decoder", "int", ["utilization/decoder_util"], 11),
    ("utilization_jpeg", "int", ["utilization/jpeg_util"], 12),
    ("utilization_ofa", "int", ["utilization/ofa_util"], 12),
    ("pcie_link_gen_current", "int", ["pci/pci_gpu_link_info/pcie_gen/current_link_gen"], 11),
    ("pcie_link_width_current", "int",
     ["pci/pci_gpu_link_info/link_widths/current_link_width"], 11),
    ("pcie_rx_util", "int", ["pci/rx_util"], 12),
    ("pcie_tx_util", "int", ["pci/tx_util"], 12),
    ("encoder_stats_session_count", "int", ["encoder_stats/session_count"], 11),
    ("encoder_stats_average_fps", "int", ["encoder_stats/average_fps"], 11),
    ("encoder_stats_average_latency", "int", ["encoder_stats/average_latency"], 11),
    ("fbc_stats_session_count", "int", ["fbc_stats/session_count"], 11),
    ("fbc_stats_average_fps", "int", ["fbc_stats/average_fps"], 11),
    ("fbc_stats_average_latency", "int", ["fbc_stats/average_latency"], 11),
    ("clocks_current_graphics", "int", ["clocks/graphics_clock"], 11),
    ("clocks_current_sm", "int", ["clocks/sm_clock"], 11),
    ("clocks_current_memory", "int", ["clocks/mem_clock"], 11),
    ("clocks_current_video", "int", ["clocks/video_clock"], 11),
    ("power_draw", "float",
     ["power_readings/power_draw", "power_readings/instant_power_draw",
      "gpu_power_readings/power_draw", "gpu_power_readings/instant_power_draw"], 11),
    ("power_draw_average", "float",
     ["power_readings/average_power_draw", "gpu_power_readings/average_power_draw"], 12),
    ("power_limit", "float",
     ["power_readings/power_limit", "gpu_power_readings/current_power_limit",
      "gpu_power_readings/power_limit"], 12),
    ("power_limit_default", "float",
     ["power_readings/default_power_limit", "gpu_power_readings/default_power_limit"], 12),
    ("power_limit_min", "float",
     ["power_readings/min_power_limit", "gpu_power_readings/min_power_limit"], 12),
    ("power_limit_max", "float",
     ["power_readings/max_power_limit", "gpu_power_readings/max_power_limit"], 12),
    ("power_limit_requested", "float",
     ["power_readings/requested_power_limit", "gpu_power_readings/requested_power_limit"], 12),
    ("module_power_draw", "float",
     ["module_power_readings/power_draw", "module_power_readings/instant_power_draw"], 12),
]

MIG_FIELDS = [
    ("sram_uncorrectable", "ecc_error_count/volatile_count/sram_uncorrectable"),
    ("memory_fb_total", "fb_memory_usage/total"),
    ("memory_fb_reserved", "fb_memory_usage/reserved"),
    ("memory_fb_used", "fb_memory_usage/used"),
    ("memory_fb_free", "fb_memory_usage/free"),
    ("memory_bar1_total", "bar1_memory_usage/total"),
    ("memory_bar1_used", "bar1_memory_usage/used"),
    ("memory_bar1_free", "bar1_memory_usage/free"),
]


def schema_of(text):
    """The parser Telegraf picks from the DOCTYPE: 11 (v10, v11, none), 12, 13."""
    m = re.search(r"nvsmi_device_v(\d+)\.dtd", text)
    if not m or int(m.group(1)) <= 11:
        return 11
    return min(int(m.group(1)), 13)


def number(v):
    """The first word of a value with its unit and a trailing 'x' stripped."""
    word = v.split()[0]
    return word[:-1] if word.endswith("x") else word


def convert(kind, raw):
    """The field value for `raw` text, or None when Telegraf would drop it."""
    if raw is None:
        return None
    v = raw.strip()
    if v in NOT_AVAILABLE:
        return None
    if kind == "str":
        return v
    try:
        return int(number(v), 10) if kind == "int" else float(number(v))
    except ValueError:
        return None


def text_at(root, gpu, path):
    node = root.find(path[1:]) if path.startswith("/") else gpu.find(path)
    return None if node is None else node.text


def set_if_used(fields, name, kind, raw):
    value = convert(kind, raw)
    if value is not None:
        fields[name] = value


def gpu_fields(root, gpu, schema):
    fields = {}
    for name, kind, paths, since in GPU_FIELDS:
        if schema < since:
            continue
        for path in paths:
            set_if_used(fields, name, kind, text_at(root, gpu, path))
    # Clock event reasons: Active -> 1, Not Active -> 0; the older
    # clocks_throttle_reason_* names are renamed to clocks_event_reason_*.
    for group, prefix in (("clocks_throttle_reasons", "clocks_throttle_reason_"),
                          ("clocks_event_reasons", "clocks_event_reason_")):
        for node in gpu.findall(group + "/*"):
            state = (node.text or "").strip()
            name = "clocks_event_reason_" + node.tag[len(prefix):]
            if state in ("Active", "Not Active"):
                fields[name] = 1 if state == "Active" else 0
    if schema >= 13:
        for node in gpu.findall("clocks_event_reasons_counters/*"):
            set_if_used(fields, node.tag, "int", node.text)
        for scope in ("volatile", "aggregate"):
            for node in gpu.findall("ecc_errors/%s/*" % scope):
                if len(node) or not node.tag.startswith(("dram_", "sram_")):
                    continue
                if node.tag == "sram_threshold_exceeded":
                    continue  # a string field, in GPU_FIELDS
                set_if_used(fields, "ecc_errors_%s_%s" % (scope, node.tag), "int", node.text)
    return fields


def gpu_tags(gpu, schema):
    tags = {}
    for tag, path in (("pstate", "performance_state"), ("name", "product_name"),
                      ("arch", "product_architecture"), ("uuid", "uuid"),
                      ("compute_mode", "compute_mode")):
        if tag == "arch" and schema < 12:
            continue
        node = gpu.find(path)
        if node is not None and node.text and node.text.strip():
            tags[tag] = node.text.strip()
    return tags


def escape_key(s):
    # As Telegraf's serializer: a backslash is left alone in tags and keys.
    return s.replace(",", "\\,").replace("=", "\\=").replace(" ", "\\ ")


def format_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return "%di" % v
    if isinstance(v, float):
        text = repr(v)
        return text[:-2] if text.endswith(".0") else text
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def line(measurement, tags, fields, ts_s):
    if not fields:
        return None  # Telegraf drops a metric without fields
    tags = dict(tags, host="test-host")
    head = measurement.replace(",", "\\,").replace(" ", "\\ ")
    head += "".join(",%s=%s" % (escape_key(k), escape_key(tags[k])) for k in sorted(tags))
    body = ",".join("%s=%s" % (escape_key(k), format_value(fields[k])) for k in sorted(fields))
    return "%s %s %d" % (head, body, ts_s * 1000000000)


def timestamp_of(root):
    node = root.find("timestamp")
    if node is None or not node.text:
        return FALLBACK_TIME_S
    try:
        parsed = time.strptime(" ".join(node.text.split()), "%a %b %d %H:%M:%S %Y")
    except ValueError:
        return FALLBACK_TIME_S
    return calendar.timegm(parsed)


def convert_file(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    schema = schema_of(text)
    root = ET.fromstring(text)
    ts = timestamp_of(root)
    lines = []
    for i, gpu in enumerate(root.findall("gpu")):
        tags = gpu_tags(gpu, schema)
        tags["index"] = str(i)
        lines.append(line("nvidia_smi", tags, gpu_fields(root, gpu, schema), ts))
        if schema < 12:
            continue
        parent = {k: v for k, v in tags.items() if k != "index"}
        for dev in gpu.findall("mig_devices/mig_device"):
            mig_tags = dict(parent)
            for tag, path in (("index", "index"), ("gpu_index", "gpu_instance_id"),
                              ("compute_index", "compute_instance_id")):
                node = dev.find(path)
                if node is not None and node.text and node.text.strip():
                    mig_tags[tag] = node.text.strip()
            fields = {}
            for name, path in MIG_FIELDS:
                node = dev.find(path)
                set_if_used(fields, name, "int", None if node is None else node.text)
            lines.append(line("nvidia_smi_mig", mig_tags, fields, ts))
        for proc in gpu.findall("processes/process_info"):
            proc_tags = {}
            for tag, path in (("name", "process_name"), ("type", "type")):
                node = proc.find(path)
                if node is not None and node.text and node.text.strip():
                    proc_tags[tag] = node.text.strip()
            fields = {}
            for name, path in (("pid", "pid"), ("used_memory", "used_memory")):
                node = proc.find(path)
                set_if_used(fields, name, "int", None if node is None else node.text)
            lines.append(line("nvidia_smi_process", proc_tags, fields, ts))
    return [l for l in lines if l is not None]


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: telegraf_nvidia_smi.py FILE.xml\n")
        return 2
    for l in convert_file(argv[1]):
        sys.stdout.write(l + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
