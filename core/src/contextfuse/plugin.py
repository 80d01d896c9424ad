"""What a plugin author needs, in one place (the second tier of the public API).

```python
from contextfuse.plugin import Ranked, StrategyCapabilities, hookimpl
```

* the hook marker ``hookimpl`` (the hooks are listed in ``docs/hooks.md``);
* strategies: the ``RankingStrategy`` protocol and its candidates (``Ranked``),
  ``NodeScoringStrategy`` (score knowledge-base nodes; the pipeline renders, resolves depths
  and packs), the toolkit of signals (reciprocal rank fusion, the prior of tests and prose),
  the specification's ``ContextStrategy`` (fragments within a budget),
  ``StrategyCapabilities`` and the ``PackingPolicy`` every ranking is packed by;
* the ten component protocols, the records that flow between them and the slot table, and the
  optional ``KeyedScorer`` / ``KeyedPacker`` extensions (a scorer and packer sharing sorted
  ``PackKey`` packing keys, the fusion engine's fast path);
* the knowledge-base protocols a strategy queries, ``BackendProvider`` for a store, and
  ``IndexContributor`` for work done while an index is built.

Users call ``contextfuse``; ``contextfuse.plugin`` is for extending it. The names are declared
once, in the ``TYPE_CHECKING`` block at the end (``contextfuse.lazy_exports``): every public
name of ``contextfuse.backends`` and ``contextfuse.components.protocols``, and the names listed.
They are imported on first use, so importing this module is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable


@runtime_checkable
class IndexContributor(Protocol):
    """Work done while an index is built (hook ``contextfuse_index_contributors``).

    ``contribute`` runs after the nodes are written, inside the index's transaction: compute
    embeddings or extra graph edges for ``session.changed_uris`` and drop what belonged to
    ``session.removed_uris``. One that raises is reported by name; the index stays usable.

    One that stores a vector per node text may also offer ``vectorizer()`` returning a
    ``NodeVectorizer``: the indexer's worker processes then compute the vectors as they
    parse, and ``contribute`` finds them stored (``session.vectorized``).
    """

    @property
    def name(self) -> str:
        """Reported in the index statistics."""
        ...

    def contribute(self, session: IndexSession) -> object:
        """Do the work; the return value is reported (e.g. a count)."""
        ...


if TYPE_CHECKING:
    from contextfuse.backends import *  # noqa: F403
    from contextfuse.components.fusion.policy import PackingPolicy as PackingPolicy
    from contextfuse.components.protocols import *  # noqa: F403
    from contextfuse.errors import InvalidPatternError as InvalidPatternError
    from contextfuse.hookspecs import hookimpl as hookimpl
    from contextfuse.kb import IndexSession as IndexSession
    from contextfuse.kb.plans import decision_tier as decision_tier
    from contextfuse.kb.terms import STOPWORDS as STOPWORDS
    from contextfuse.kb.vectorizers import NodeVectorizer as NodeVectorizer
    from contextfuse.models import ContextBudget as ContextBudget
    from contextfuse.models import ContextFragment as ContextFragment
    from contextfuse.models import ContextRequest as ContextRequest
    from contextfuse.models import Decision as Decision
    from contextfuse.models import DetailDepth as DetailDepth
    from contextfuse.models import FragmentProvenance as FragmentProvenance
    from contextfuse.models import Plan as Plan
    from contextfuse.models import PlanContext as PlanContext
    from contextfuse.models import StrategyCapabilities as StrategyCapabilities
    from contextfuse.node_scoring import NodeScoringStrategy as NodeScoringStrategy
    from contextfuse.node_scoring import ranking_of as ranking_of
    from contextfuse.ranked import Ranked as Ranked
    from contextfuse.signals import RequestIntent as RequestIntent
    from contextfuse.signals import is_record_path as is_record_path
    from contextfuse.signals import is_test_path as is_test_path
    from contextfuse.signals import node_prior as node_prior
    from contextfuse.signals import reciprocal_rank_fusion as reciprocal_rank_fusion
    from contextfuse.signals import uri_path as uri_path
    from contextfuse.signals import weigh_by_prior as weigh_by_prior
    from contextfuse.slots import SLOTS as SLOTS
    from contextfuse.slots import Slot as Slot
    from contextfuse.stores import BackendProvider as BackendProvider
    from contextfuse.strategy import ContextStrategy as ContextStrategy
    from contextfuse.strategy import RankingStrategy as RankingStrategy
    from contextfuse.tokenizer import Tokenizer as Tokenizer
    from contextfuse.tokenizer import default_tokenizer as default_tokenizer
else:
    from contextfuse.lazy_exports import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, extra=("IndexContributor",))
