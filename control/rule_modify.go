package control

import (
	"sync"

	"urouter/rules"
)

// The rule object: ip rule { add | del | show | list | flush | save |
// restore }, with iprule.c's grammar, output and errors. The router has
// IPv6 rules only: a rule is IPv6 with or without -6.

func ruleUsage() *cmdErr {
	return parseErr(`Usage: ip rule { add | del } SELECTOR ACTION
       ip rule { flush | save | restore }
       ip rule [ list [ SELECTOR ]]
SELECTOR := [ not ] [ from PREFIX ] [ to PREFIX ] [ tos TOS ]
            [ fwmark FWMARK[/MASK] ]
            [ iif STRING ] [ oif STRING ] [ pref NUMBER ] [ l3mdev ]
            [ uidrange NUMBER-NUMBER ]
            [ ipproto PROTOCOL ]
            [ sport [ NUMBER | NUMBER-NUMBER ]
            [ dport [ NUMBER | NUMBER-NUMBER ] ]
ACTION := [ table TABLE_ID ]
          [ protocol PROTO ]
          [ nat ADDRESS ]
          [ realms [SRCREALM/]DSTREALM ]
          [ goto NUMBER ]
          SUPPRESSOR
SUPPRESSOR := [ suppress_prefixlength NUMBER ]
              [ suppress_ifgroup DEVGROUP ]
TABLE_ID := [ local | main | default | NUMBER ]`)
}

func (s *Session) ruleCmd(args [][]byte) *cmdErr {
	if len(args) == 0 {
		return s.ruleShow(nil, ruleList)
	}
	w, rest := args[0], args[1:]
	switch ruleCmds().of(w) {
	case rlList:
		return s.ruleShow(rest, ruleList)
	case rlSave:
		if len(rest) > 0 {
			return &cmdErr{msg: "\"ip rule save\" does not take any arguments.", code: 1}
		}
		return s.ruleShow(nil, ruleSave)
	case rlRestore:
		return parseErr("Error: \"rule restore\" reads its rules from standard input: run it from the client (urouter rule restore < FILE).")
	case rlAdd:
		return s.ruleModify(rest, false)
	case rlDelete:
		return s.ruleModify(rest, true)
	case rlFlush:
		return s.ruleShow(rest, ruleFlush)
	case rlHelp:
		return ruleUsage()
	}
	return parseErr("Command \"%s\" is unknown, try \"ip rule help\".", w)
}

const (
	rlList = iota + 1
	rlSave
	rlRestore
	rlAdd
	rlDelete
	rlFlush
	rlHelp
)

// ruleCmds() are do_iprule's command words, in its order.
var ruleCmds = sync.OnceValue(func() keywords {
	return newKeywords([]kw{
		{"list", true, rlList}, {"lst", true, rlList}, {"show", true, rlList}, {"save", true, rlSave},
		{"restore", true, rlRestore}, {"add", true, rlAdd}, {"delete", true, rlDelete}, {"flush", true, rlFlush},
		{"help", true, rlHelp},
	})
})

// ruleTxn returns the session's open rule transaction, opening one.
// Consecutive rule commands so go out in one publish.
func (s *Session) ruleTxn() *rules.Txn {
	if s.rtxn == nil {
		s.rtxn = s.r.Rules.Begin()
	}
	return s.rtxn
}

func (s *Session) ruleModify(args [][]byte, del bool) *cmdErr {
	if len(args) == 0 {
		verb := "add"
		if del {
			verb = "del"
		}
		return &cmdErr{msg: "\"ip rule " + verb + "\" requires arguments.", code: 1}
	}
	sel, err := s.parseRule(args, del)
	if err != nil {
		return err
	}
	x := s.ruleTxn()
	var e error
	if del {
		_, e = x.Delete(sel)
	} else {
		_, e = x.Add(sel.Rule, sel.PrefSet)
	}
	if e != nil {
		return rejected(e)
	}
	return nil
}
