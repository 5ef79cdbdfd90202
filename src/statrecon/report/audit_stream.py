"""The human view of a stream audit: one block per statistic, then a summary.

Certificates are shown as combinations of statistic ids (``q1 - q2 - q3``), secret values only
when asked (``show_values``), user text (ids, public values) escaped for the terminal. The
events and the summary come from ``runs/audit_stream.py``; this module reads them through the
protocols below and imports nothing from the run.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Protocol

from rich.console import Console
from rich.markup import escape

from statrecon.engines.linear.model import SecretColumn
from statrecon.engines.stream import AuditStep, Disclosure, Domain, public_record, secret_label
from statrecon.release.known import PublicTable
from statrecon.release.statistic import number_out
from statrecon.report import safe_text

SHOWN_TERMS = 8  # certificate terms in the human view
SHOWN_RECORDS = 20  # determined records listed in the human summary
_STYLES = {"accepted": "green", "denied": "yellow", "inconsistent": "bold red", "skipped": "dim"}


class AuditedStatistic(Protocol):
    """What the report reads from an audit event (``runs.audit_stream.AuditEvent``)."""

    @property
    def statistic(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def step(self) -> AuditStep | None: ...
    @property
    def note(self) -> str: ...
    @property
    def answer(self) -> Fraction | None: ...
    @property
    def secret(self) -> SecretColumn | None: ...


class AuditTotals(Protocol):
    """What the report reads from the summary (``runs.audit_stream.AuditSummary``)."""

    @property
    def accepted(self) -> int: ...
    @property
    def denied(self) -> int: ...
    @property
    def inconsistent(self) -> int: ...
    @property
    def skipped(self) -> int: ...
    @property
    def statistics(self) -> int: ...
    @property
    def rank(self) -> int: ...
    @property
    def records(self) -> int: ...
    @property
    def determined(self) -> tuple[Disclosure, ...]: ...
    @property
    def arithmetic(self) -> str: ...
    @property
    def switched_at(self) -> str | None: ...


def frac_text(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


def combination_text(terms: tuple[tuple[str, Fraction], ...]) -> str:
    """``q1 - q2 - 1/2·q3`` (the first few terms of a certificate)."""
    parts = []
    for k, (sid, c) in enumerate(terms[:SHOWN_TERMS]):
        sign = "-" if c < 0 else "+"
        mag = abs(c)
        body = sid if mag == 1 else f"{frac_text(mag)}·{sid}"
        parts.append((f"-{body}" if sign == "-" else body) if k == 0 else f"{sign} {body}")
    if len(terms) > SHOWN_TERMS:
        parts.append(f"… ({len(terms) - SHOWN_TERMS} more terms)")
    return " ".join(parts)


def value_text(v: Fraction) -> str:
    """A number for a person: exact while short, else about 6 significant digits."""
    exact = frac_text(v)
    return exact if len(exact) <= 24 else f"≈{float(v):.6g}"


def domain_text(d: Domain) -> str:
    lo = "-inf" if d.lower is None else frac_text(d.lower)
    hi = "inf" if d.upper is None else frac_text(d.upper)
    return f"{lo}..{hi}" + (", whole numbers" if d.integral else "")


def _markup(text: object) -> str:
    """User text (ids, SQL, public values) in Rich markup: literal, and no terminal escapes."""
    return escape(safe_text(text))


class AuditText:
    """Prints an audit for a person (Rich): each statistic as it is decided, then totals."""

    def __init__(self, console: Console, *, show_values: bool, public: PublicTable,
                 secret_name: str, domain: Domain) -> None:
        self.console = console
        self.show_values = show_values
        self.public = public
        self.secret_name = secret_name
        self.domain = domain

    def record_text(self, d: Disclosure, secret: SecretColumn | None) -> str:
        cols = ", ".join(f"{k}={v}" for k, v in public_record(self.public, d.index).items())
        text = f"record {d.index + 1}" + (f" ({cols})" if cols else "")
        if self.show_values:
            text += f" = {secret_label(secret, d.value)}"
        if d.certificate:
            text += f" via {combination_text(d.certificate)}"
        elif not d.proven:
            text += " (certificate too large to rebuild exactly)"
        return text

    def step(self, event: AuditedStatistic) -> None:
        status = event.status
        head = f"[{_STYLES[status]}]{status:<12}[/] {_markup(event.statistic)}"
        step = event.step
        if step is None:
            self.console.print(f"{head}  [dim]{_markup(event.note)}[/]")
            return
        tail = f"  rank {step.rank}"
        if event.note:
            tail += f"  [dim]{_markup(event.note)}[/]"
        for d in step.newly_determined:
            tail += f"\n  [bold red]discloses[/] {_markup(self.record_text(d, event.secret))}"
        for d in step.would_disclose:
            tail += f"\n  [yellow]would disclose[/] {_markup(self.record_text(d, event.secret))}"
        if status == "inconsistent":
            tail += f"\n  [red]contradiction[/]: {_markup(self.contradiction(event, step))}"
        self.console.print(head + tail, soft_wrap=True)

    def contradiction(self, event: AuditedStatistic, step: AuditStep) -> str:
        """Why no dataset fits: statistics that cancel, a record pinned outside the domain,
        or an answer the domain cannot produce."""
        names = combination_text(step.conflict) if any(k for _, k in step.conflict) \
            else ", ".join(s for s, _ in step.conflict)
        domain = f"the domain of {self.secret_name} ({domain_text(self.domain)})"
        if step.outside is not None and step.outside.value is not None:
            return (f"{names} pins record {step.outside.index + 1} to "
                    f"{value_text(step.outside.value)}, outside {domain}")
        if step.attainable is not None:
            lo, hi = step.attainable
            span = (f"{'-inf' if lo is None else value_text(lo)}.."
                    f"{'inf' if hi is None else value_text(hi)}")
            whole = " and a whole number" if self.domain.integral else ""
            return (f"{names} is {span}{whole} on every dataset in {domain}, but adds up to "
                    f"{value_text(event.answer or Fraction(0))} as published")
        gap = (f"answers add up to {number_out(step.discrepancy)}"
               if step.discrepancy is not None else "answers do not add up to 0")
        return f"{names} is 0 on every record, but its {gap}"

    def summary(self, totals: AuditTotals) -> None:
        t = totals
        line = (f"{t.statistics} statistics: {t.accepted} accepted, {t.denied} denied, "
                f"{t.inconsistent} inconsistent" + (f", {t.skipped} skipped"
                                                     if t.skipped else "")
                + f"; rank {t.rank} of {t.records} records")
        self.console.print(f"\n[bold]{line}[/]", soft_wrap=True)
        determined = t.determined
        if determined:
            shown = ", ".join(str(d.index + 1) for d in determined[:SHOWN_RECORDS])
            more = f" … and {len(determined) - SHOWN_RECORDS} more" if len(
                determined) > SHOWN_RECORDS else ""
            self.console.print(f"[bold red]{len(determined)} record(s) determined[/] "
                               f"({_markup(self.secret_name)} pinned exactly): "
                               f"{shown}{more}", soft_wrap=True)
        else:
            self.console.print("[green]no record is determined[/] by the accepted statistics")
        if t.switched_at is not None:
            self.console.print(
                f"[dim]note: exact rationals grew expensive at statistic "
                f"'{_markup(t.switched_at)}'; later statistics were decided modulo two random "
                "primes (disclosures and contradictions still proven exactly; a missed "
                "disclosure needs both primes to divide one number of the elimination)[/]",
                soft_wrap=True)
        elif t.arithmetic == "modular":
            self.console.print("[dim]note: decided modulo two random primes (disclosures and "
                               "contradictions proven exactly)[/]", soft_wrap=True)
