"""The query-stream auditor: ``equation`` turns a stream statistic into one linear equation in
the secret column; ``auditor`` keeps the row space of the equations so far and says, one
statistic at a time, which records each answer newly pins, with certificates (its
arithmetic: rational, modular or auto)."""

from statrecon.engines.stream.auditor import (
    ARITHMETICS,
    Arithmetic,
    AuditStep,
    Disclosure,
    Domain,
    StreamAuditor,
)
from statrecon.engines.stream.equation import (
    Compiled,
    StreamCompiler,
    public_record,
    secret_domain,
    secret_label,
)

__all__ = ["ARITHMETICS", "Arithmetic", "AuditStep", "Compiled", "Disclosure", "Domain",
           "StreamAuditor", "StreamCompiler", "public_record", "secret_domain", "secret_label"]
