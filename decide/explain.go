package decide

import (
	"net/netip"

	"urouter/fib6"
	"urouter/rules"
)

// StepKind is what a step of a decision did.
type StepKind uint8

const (
	RuleMatched StepKind = iota // the packet matches the rule
	RuleSkipped                 // it does not (Step.Miss says why)
	Jump                        // a goto rule: on at Target (-1: unresolved, on after it)
	NoTable                     // the rule's table does not exist: on to the next rule
	NoMatch                     // the table has no route for the packet: on to the next rule
	SourceMiss                  // Prefix's routes are all for other sources: passed over
	Thrown                      // a throw route: on to the next rule
	Suppressed                  // suppress_prefixlength passed the route over: on
	Found                       // the route that decides
	RuleDecided                 // a blackhole, unreachable or prohibit rule decides
	Selected                    // the multipath member the flow's hash selected
	NoRule                      // no rule decided
)

// Step is one step of a decision, as `route get -d` prints it.
type Step struct {
	Kind   StepKind
	Index  int         // the rule's index in Rules
	Rule   *rules.Rule // the rule the step is about
	Miss   rules.Miss  // for RuleSkipped
	Target int         // for Jump
	Table  uint32
	Prefix netip.Prefix
	Route  *fib6.Attrs
	Hash   uint32 // for Selected: the flow's hash
	Member int    // for Selected
}

// Explanation is a decision and how it was reached.
type Explanation struct {
	Steps  []Step
	Result Result
}

// explainer records the steps of one decision; a nil explainer records
// nothing (the decisions packets take).
type explainer struct {
	set   *rules.Set
	cur   rules.Cursor
	steps []Step
}

func (x *explainer) step(s Step) {
	if x == nil {
		return
	}
	if s.Index >= 0 {
		s.Rule = x.set.Rule(s.Index)
	}
	x.steps = append(x.steps, s)
}

func (x *explainer) rule(i int, matched bool) {
	if matched {
		x.step(Step{Kind: RuleMatched, Index: i})
	} else {
		x.step(Step{Kind: RuleSkipped, Index: i, Miss: x.cur.Why(i)})
	}
}

// Explain decides for k as Decide does, and says how: each rule tried
// and why it matched or not, each table looked up and what it gave, and
// the multipath member the flow's hash chose.
func (d *Decider) Explain(k *Key) Explanation {
	ex := &explainer{set: d.Rules.Load()}
	r := d.decide(k, ex)
	if r.Group != nil {
		f := k.Flow()
		ex.steps = append(ex.steps, Step{Kind: Selected, Index: -1, Hash: d.Hasher().Hash(&f), Member: r.Member})
	}
	return Explanation{Steps: ex.steps, Result: r}
}

// lookup records what a table lookup passed over and found.
func (x *explainer) lookup(i int, id uint32, t *fib6.Table, dst, src netip.Addr, found netip.Prefix, ok bool) {
	if x == nil {
		return
	}
	if p, hidden := t.Hidden(dst, src); hidden && (!ok || p.Bits() > found.Bits()) {
		x.step(Step{Kind: SourceMiss, Index: i, Table: id, Prefix: p})
	}
	if !ok {
		x.step(Step{Kind: NoMatch, Index: i, Table: id})
	}
}
