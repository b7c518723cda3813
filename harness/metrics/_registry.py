"""Metrics as registered, declarative objects (one name, one metric), parsed from strings like `nDCG@10` or from
trec_eval's names (`P_10` is P@10, `map` MAP over the whole ranking, `bpref`, `iprec_at_recall_0.20`, ...)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from harness.metrics import trec, trec_gains
from harness.metrics._ranking import MATRIX_METRICS, Qrels, RelevanceMatrix, RunLike, relevance_matrix

_ALIASES = {"recall": "recall", "r": "recall", "p": "p", "precision": "p", "ndcg": "ndcg",
            "mrr": "mrr", "rr": "mrr", "map": "map", "ap": "map", "hit": "hit", "success": "hit"}
_PATTERN = re.compile(r"^\s*([A-Za-z]+)\s*@\s*(\d+)\s*$")
_PRETTY = {"ndcg": "nDCG", "recall": "Recall", "p": "P", "mrr": "MRR", "map": "MAP", "hit": "Hit"}
# trec_eval's names for the cutoff family, and for its members taken over the whole ranking
_TREC_CUTOFF = {"P": "p", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "map", "success": "hit"}
_TREC_WHOLE = {"map": "map", "recip_rank": "mrr", "ndcg": "ndcg", "set_recall": "recall"}
_WHOLE_NAME = {v: k for k, v in _TREC_WHOLE.items()}


@dataclass(frozen=True)
class TrecMetric:
    """A trec_eval measure: its function, how its parameter is written, all_trec's parameters, its summary."""

    fn: Callable[[RelevanceMatrix, Any], np.ndarray]
    kind: str = "none"  # none | cutoff (name_K) | fraction (name_0.20) | list (name_a,b,c) | gains (name_1=3,2=9)
    defaults: tuple[Any, ...] = ()  # floats (cutoffs, fractions) or (level, gain) pairs
    aggregate: str = "mean"  # mean | sum | geometric: how trec_eval's `all` line summarises the queries


_TENTHS = tuple(round(0.1 * i, 1) for i in range(11))
_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
TREC_METRICS: dict[str, TrecMetric] = {
    "num_ret": TrecMetric(trec.num_ret, aggregate="sum"), "num_rel": TrecMetric(trec.num_rel, aggregate="sum"),
    "num_rel_ret": TrecMetric(trec.num_rel_ret, aggregate="sum"),
    "gm_map": TrecMetric(trec.gm_map, aggregate="geometric"), "Rprec": TrecMetric(trec.rprec),
    "bpref": TrecMetric(trec.bpref), "iprec_at_recall": TrecMetric(trec.iprec_at_recall, "fraction", _TENTHS),
    "infAP": TrecMetric(trec.infap), "gm_bpref": TrecMetric(trec.bpref, aggregate="geometric"),
    "Rprec_mult": TrecMetric(trec.rprec_mult, "fraction", tuple(round(0.2 * i, 1) for i in range(1, 11))),
    "utility": TrecMetric(trec.utility, "list", (1.0, -1.0, 0.0, 0.0)),
    "11pt_avg": TrecMetric(trec.eleven_pt_avg, "list", _TENTHS), "binG": TrecMetric(trec.bin_g),
    "G": TrecMetric(trec_gains.g), "ndcg": TrecMetric(trec_gains.ndcg_gains, "gains"),
    "ndcg_rel": TrecMetric(trec_gains.ndcg_rel), "Rndcg": TrecMetric(trec_gains.rndcg),
    "relative_P": TrecMetric(trec.relative_p, "cutoff", _CUTS), "set_P": TrecMetric(trec.set_p),
    "set_relative_P": TrecMetric(trec.set_relative_p), "set_map": TrecMetric(trec.set_map),
    "set_F": TrecMetric(trec.set_f), "num_nonrel_judged_ret": TrecMetric(trec.num_nonrel_judged_ret, aggregate="sum"),
    "rbp": TrecMetric(trec_gains.rbp), "rbp_resid": TrecMetric(trec.rbp_resid),
    "unj": TrecMetric(trec.unj, "cutoff", (5, 10, 20)),
}
# trec_eval's measure sets, in its print order; runid and relstring are text, num_q the count of queries
OFFICIAL = ("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
            *(f"iprec_at_recall_{x:.2f}" for x in _TENTHS), *(f"P_{k}" for k in _CUTS))
ALL_TREC = (*OFFICIAL, *(f"recall_{k}" for k in _CUTS), "infAP", "gm_bpref",
            *(f"Rprec_mult_{x:.2f}" for x in TREC_METRICS["Rprec_mult"].defaults), "utility", "11pt_avg", "binG",
            "G", "ndcg", "ndcg_rel", "Rndcg", *(f"ndcg_cut_{k}" for k in _CUTS), *(f"map_cut_{k}" for k in _CUTS),
            *(f"relative_P_{k}" for k in _CUTS), *(f"success_{k}" for k in (1, 5, 10)), "set_P", "set_relative_P",
            "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid",
            *(f"unj_{k}" for k in (5, 10, 20)))
MEASURE_SETS = {"official": OFFICIAL, "all_trec": ALL_TREC}


def _num(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class Measure:
    """A ranking measure: Measure('ndcg', 10) is `nDCG@10`, Measure('map') trec_eval's `map` (the whole ranking)."""

    name: str
    k: int | None = None  # cutoff; None: the whole ranking
    param: tuple[Any, ...] = ()  # a trec_eval measure's parameters (recall level, R multiple, coefficients, gain map)

    @property
    def _in_matrix_family(self) -> bool:
        return self.name in MATRIX_METRICS and not self.param  # `ndcg` with a gain map is trec_eval's

    def __str__(self) -> str:
        if self._in_matrix_family:
            return f"{_PRETTY[self.name]}@{self.k}" if self.k is not None else _WHOLE_NAME[self.name]
        kind = TREC_METRICS[self.name].kind
        if kind == "cutoff":
            return f"{self.name}_{self.k}"
        if kind == "fraction":
            return f"{self.name}_{self.param[0]:.2f}"
        if kind == "list" and self.param:
            return f"{self.name}_" + ",".join(_num(x) for x in self.param)
        if kind == "gains":
            return f"{self.name}_" + ",".join(f"{lv}={_num(g)}" for lv, g in self.param)
        return self.name

    @property
    def aggregate(self) -> str:
        """How the per-query values are summarised: mean, sum or geometric (trec_eval's `all`)."""
        return "mean" if self._in_matrix_family else TREC_METRICS[self.name].aggregate

    def values(self, mat: RelevanceMatrix) -> np.ndarray:
        """Per-query values from a relevance matrix at least as deep as the measure looks."""
        if self._in_matrix_family:
            return MATRIX_METRICS[self.name](mat, self.k if self.k is not None else mat.rels.shape[1])
        spec = TREC_METRICS[self.name]
        if spec.kind == "cutoff":
            return spec.fn(mat, self.k)
        if spec.kind == "fraction":
            return spec.fn(mat, self.param[0])
        return spec.fn(mat, self.param or spec.defaults)

    def per_query(self, qrels: Qrels, run: RunLike) -> np.ndarray:
        return evaluate(qrels, run, [self])[str(self)]


def _trec_measure(text: str) -> Measure | None:
    """trec_eval's printed name (`P_10`, `map`, `iprec_at_recall_0.10`, `ndcg_1=3,2=9`) -> Measure, or None."""
    if text in _TREC_WHOLE:
        return Measure(_TREC_WHOLE[text])
    if text in TREC_METRICS and TREC_METRICS[text].kind in ("none", "list"):
        return Measure(text)
    head, _, tail = text.rpartition("_")
    if head in _TREC_CUTOFF and tail.isdigit() and int(tail) > 0:
        return Measure(_TREC_CUTOFF[head], int(tail))
    for name in sorted(TREC_METRICS, key=len, reverse=True):
        spec, rest = TREC_METRICS[name], text[len(name) + 1:]
        if not text.startswith(name + "_") or not rest:
            continue
        try:
            if spec.kind == "cutoff" and rest.isdigit() and int(rest) > 0:
                return Measure(name, int(rest))
            if spec.kind == "fraction":
                return Measure(name, param=(float(rest),))
            if spec.kind == "list":
                values = tuple(float(x) for x in rest.split(","))
                if name == "utility" and len(values) != 4:
                    return None
                return Measure(name, param=() if values == spec.defaults else values)
            if spec.kind == "gains":
                pairs = tuple((int(lv), float(gain)) for lv, gain in (kv.split("=") for kv in rest.split(",")))
                return Measure(name, param=pairs) if all(lv >= 0 for lv, _ in pairs) else None
        except ValueError:
            return None
    return None


def parse_measure(text: str) -> Measure:
    """`'nDCG@10'` -> Measure('ndcg', 10); trec_eval's names too (`'P_10'`, `'bpref'`); unknown names raise."""
    m = _PATTERN.match(text)
    if not m:
        trec_measure = _trec_measure(text.strip())
        if trec_measure is not None:
            return trec_measure
    if not m or m.group(1).lower() not in _ALIASES:
        raise ValueError(f"unknown measure {text!r}; expected NAME@K with NAME in {sorted(set(_ALIASES))}, "
                         f"or one of trec_eval's measure names (e.g. map, P_10, bpref, iprec_at_recall_0.20)")
    k = int(m.group(2))
    if k < 1:
        raise ValueError(f"measure {text!r}: cutoff must be >= 1")
    return Measure(_ALIASES[m.group(1).lower()], k)


def parse_measures(texts: Iterable[str | Measure]) -> list[Measure]:
    """Measures and measure sets (`official`, `all_trec`: trec_eval's) -> Measures, each once, in order."""
    out: list[Measure] = []
    for t in texts:
        for one in (MEASURE_SETS[t] if isinstance(t, str) and t in MEASURE_SETS else (t,)):
            m = parse_measure(one) if isinstance(one, str) else one
            if m not in out:
                out.append(m)
    return out


def _whole_depth(qrels: Qrels, run: RunLike) -> int:
    """Deep enough for every hit and for an ideal ranking of every judged doc (a gain map may make grade 0 count)."""
    return max((max(len(run.get(q, ())), sum(g >= 0 for g in qrels[q].values())) for q in qrels), default=0)


def evaluate(qrels: Qrels, run: RunLike, measures: Iterable[str | Measure], *, level: int = 1,
             order: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Per-query values for several measures from one relevance matrix (grade >= `level` relevant, trec_eval -l),
    in the judged queries' id order (`sorted(qrels)`), or in `order` (each a judged query: the order they were
    drawn in, which a sequential claim's looks and its recorded outcomes read)."""
    ms = parse_measures(measures)
    if not ms:
        return {}
    depth = max((m.k for m in ms if m.k is not None), default=0)
    if any(m.k is None or not m._in_matrix_family for m in ms):  # trec_eval's measures read every hit
        depth = max(depth, _whole_depth(qrels, run))
    mat = relevance_matrix(qrels, run, depth, level)
    values = {str(m): m.values(mat) for m in ms}
    if order is None:
        return values
    at = {q: i for i, q in enumerate(mat.query_ids)}
    missing = [q for q in order if q not in at]
    if missing:
        raise KeyError(f"evaluate: {len(missing)} queries in `order` have no judgements, e.g. {missing[0]!r}")
    index = np.fromiter((at[q] for q in order), np.int64, len(order))
    return {name: v[index] for name, v in values.items()}


def summarize(values: np.ndarray, how: str = "mean") -> float:
    """Queries' values -> one figure as trec_eval's `all` line: mean, sum, or geometric mean (floor 1e-5)."""
    if not len(values):
        return 0.0
    if how == "sum":
        return float(np.cumsum(values)[-1])
    if how == "geometric":
        return math.exp(float(np.cumsum(np.log(np.maximum(values, trec.MIN_GEO_MEAN)))[-1]) / len(values))
    return float(np.cumsum(values)[-1]) / len(values)


def mean_scores(qrels: Qrels, run: RunLike, measures: Iterable[str | Measure]) -> dict[str, float]:
    return {name: float(v.mean()) if len(v) else 0.0 for name, v in evaluate(qrels, run, measures).items()}


def aggregates(measures: Iterable[str | Measure]) -> Mapping[str, str]:
    """Each measure's printed name -> how its queries are summarised."""
    return {str(m): m.aggregate for m in parse_measures(measures)}
