package seg6

// LWTUNNEL_ENCAP_* of the two encapsulations.
const (
	EncapTypeSeg6      = 5
	EncapTypeSeg6Local = 7
)

// State is a path's lightweight tunnel (Linux's lwtunnel_state): a seg6
// encapsulation or a seg6local behaviour, exactly one of them. It is
// immutable once on a route, but for a behaviour's counters.
type State struct {
	Encap *Encap
	Local *Local
}

// Type is the state's LWTUNNEL_ENCAP_*.
func (s *State) Type() uint16 {
	if s.Local != nil {
		return EncapTypeSeg6Local
	}
	return EncapTypeSeg6
}
