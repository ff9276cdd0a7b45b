package poll

// The state word of a Registration's node (regNode.state): everything
// producers and the consumer share about it, in one atomic word, so that
// every transition is one CAS that sees and makes a consistent whole. The
// rules each transition keeps are the invariants of readiness_queue.go.
//
//	bits   name             what
//	 0- 7  ready            readiness set by SetReadiness (Ready bits)
//	 8-15  interest         the registered interest (Ready bits); 0 while
//	                        deregistered or disarmed (oneshot)
//	16-23  opts             the registered mode (Edge, Level, Oneshot)
//	   24  stQueued         linked: in the readiness queue or the held list
//	   25  stRegistered     registered with its Poll
//	   26  stDropped        closed (Registration.Close); final
//	27-28  token write      the token slot Reregister last published
//	29-30  token read       the token slot the consumer last read
//	   31  stOwed           an edge since the last report (see below)
//	   32  stLinked         debug builds only (invariants.go)
//	33-63                   free

const (
	stReadyShift    = 0
	stInterestShift = 8
	stOptsShift     = 16
	stReadyMask     = uint64(allReady) << stReadyShift
	stInterestMask  = uint64(allReady) << stInterestShift
	stOptsMask      = uint64(Edge|Level|Oneshot) << stOptsShift
	stQueued        = uint64(1) << 24
	stRegistered    = uint64(1) << 25
	stDropped       = uint64(1) << 26
	// The token lives in one of three slots (regNode.tokens). Reregister
	// writes the new token into a slot that is neither the current one
	// (write) nor the one the consumer may be reading (read), then
	// publishes it with the new interest in one CAS; the consumer's
	// delivering CAS moves read to the current slot. So the token an event
	// carries always belongs to the same Reregister as the interest that
	// filtered it, and no slot is overwritten while it is being read.
	stTokWriteShift = 27
	stTokReadShift  = 29
	stTokMask       = uint64(3)
	// stOwed: a SetReadiness (or a Reregister, rule 5) made the node ready
	// for its interest since the consumer last reported it: an event is
	// owed. It is what makes an edge for a node that stays queued (held by
	// the consumer, see held.go); level nodes report whenever they are
	// ready.
	stOwed = uint64(1) << 31
)

func stTokWrite(s uint64) uint64 { return s >> stTokWriteShift & stTokMask }
func stTokRead(s uint64) uint64  { return s >> stTokReadShift & stTokMask }

// freeTokenSlot is the slot that is neither written nor read.
func freeTokenSlot(s uint64) uint64 {
	w, r := stTokWrite(s), stTokRead(s)
	for i := uint64(0); ; i++ {
		if i != w && i != r {
			return i
		}
	}
}

func stReady(s uint64) Ready    { return Ready(s >> stReadyShift & uint64(allReady)) }
func stInterest(s uint64) Ready { return Ready(s >> stInterestShift & uint64(allReady)) }
func stOpts(s uint64) PollOpt   { return PollOpt(s >> stOptsShift & uint64(Edge|Level|Oneshot)) }
func stPending(s uint64) Ready  { return stReady(s) & stInterest(s) }
func stWithInterest(s uint64, i Ready, o PollOpt) uint64 {
	return s&^(stInterestMask|stOptsMask) | uint64(i)<<stInterestShift | uint64(o)<<stOptsShift
}

// stDeliverable reports whether a node in state s has an event to report:
// registered, ready for its interest, and either owed an event since the
// last report (edge) or level-triggered.
func stDeliverable(s uint64) bool {
	if s&(stDropped|stRegistered) != stRegistered || stPending(s) == 0 {
		return false
	}
	return s&stOwed != 0 || stOpts(s).IsLevel()
}
