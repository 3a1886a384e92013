package replica

import (
	"errors"
	"fmt"
	"sync"

	"github.com/casty-go/casty/pager"
)

// Set is one actor's replica set as its owner sees it.
type Set struct {
	// Self is the owner's node; it must be one of Members.
	Self NodeID
	// Members is the actor's replica set: the owner and the next distinct
	// placed members on the ring, n = min(R, placed members).
	Members []NodeID
	// W is the acknowledgements a commit needs, resolved against the
	// configured replica count R (not against len(Members)).
	W int
	// R is the configured replica count; zero means len(Members). Reads
	// (prepares, confirms) need OwnerQuorumOf(len(Members), R, W) answers.
	R int
	// Batch bounds the bytes of one message part (default
	// pager.DefaultBatchSize).
	Batch int
	// Spares, when positive, lets a commit whose answer rides to the
	// caller's member (CommitAnswering) skip the members its write quorum
	// does not need — the set's spares — for up to Spares commits in a
	// row. A skipped member gets what it missed as one delta (Since), with
	// the next commit that does not skip it or on Flush; the runtime calls
	// Flush when a round is slow to decide and when the actor goes quiet
	// (SPEC.md, "Spare copies"). Zero sends every commit to every member.
	Spares int
	// Version and Digest name the placement Members was computed from;
	// replicas that know a newer one refuse the session (StatusBehind).
	Version, Digest uint64
}

// Out is a request for the runtime to send; the reply goes back through
// Session.Step.
type Out struct {
	To  NodeID
	Msg *Msg
}

// Result is how a round ended. Err is nil on success.
type Result struct {
	// Round is the round that ended.
	Round Round
	// Err is nil, ErrQuorumUnavailable or ErrFenced (wrapped with detail).
	Err error
	// Applied reports, for a failed commit, whether any copy (the owner's
	// own included) may hold it: false means the write took effect nowhere
	// and a retry elsewhere is safe.
	Applied bool
	// Fenced reports that a replica promised a higher ballot: a newer
	// owner exists. A commit can succeed and still be fenced (it reached
	// its quorum first); the session must end after it either way.
	Fenced bool
	// Promised is the highest ballot a refusal named, for the runtime's
	// clock to observe so that its next ballot is higher.
	Promised Ballot
	// State is the session's state after the round: the adopted state
	// after activation, the new one after a commit.
	State State
	// Version is the highest placement version a replica refused this
	// session's older one with (StatusBehind), and Facts that replica's
	// placement: the runtime merges it before a new session can succeed.
	Version uint64
	Facts   []byte
	// Abstained counts the replicas that answered but could not vote (they
	// have not synced the actor's range on this placement yet): a round
	// that failed with abstentions may succeed once they have.
	Abstained int
}

// Round names a session's rounds.
type Round uint8

// The rounds, in the order an activation runs them.
const (
	RoundNone    Round = iota
	RoundPrepare       // promises from a read quorum, the adopted state chosen
	RoundFetch         // the adopted state's missing pages fetched from a holder
	RoundInstall       // the adopted state written to a write quorum (when too few hold it)
	RoundCommit        // a commit acknowledged by a write quorum
	RoundConfirm       // a read quorum confirmed no newer owner exists
)

var roundNames = [...]string{"none", "prepare", "fetch", "install", "commit", "confirm"}

func (r Round) String() string {
	if int(r) < len(roundNames) {
		return roundNames[r]
	}
	return fmt.Sprintf("Round(%d)", uint8(r))
}

// Session is the owner side of one activation of one actor: it takes the
// activation's ballot, adopts the newest state a read quorum holds,
// fetches the pages it lacks, re-installs the state when too few copies
// hold it, and then commits each handler's delta to a write quorum (or
// confirms, for Read(Majority), that no newer owner exists).
//
// It is a pure state machine: requests come out as Out values (the runtime
// sends them and feeds replies to Step), time comes in as Expire (the
// runtime's deadline for the round). Requests to Self are answered by the
// local Replica inside the call, never sent. Rounds run one at a time; a
// session whose round failed is over (the runtime discards the
// activation). Not safe for concurrent use: the runtime serializes calls
// together with those of the local Replica.
type Session struct {
	kind, key string
	set       Set
	local     *Replica
	ballot    Ballot
	q         int   // a prepare's and a confirm's quorum (OwnerQuorumOf)
	confirmN  int   // the running confirm round's number, carried in Part and echoed
	state     State // adopted, then committed

	round   Round
	over    bool
	answers map[NodeID]Status
	oks     int
	refused int
	abstain int    // answers that do not count (non-voters)
	version uint64 // the highest placement version a refusal named
	facts   []byte // that refusal's placement
	fenced  bool
	atLimit bool // a replica refused with StatusFull this round
	highest Ballot
	results []Result

	// prepare
	promises map[NodeID]State
	best     State
	// fetch
	holders   []NodeID
	src       int
	have      map[string]pager.Page
	fetchHave *pager.Listing
	part      int
	// commit / install
	parts    []pager.Delta
	full     []pager.Delta
	fullSent map[NodeID]bool
	// caughtUp: members sent a catch-up this round (only the pages their
	// copy lacks, SPEC.md "Owner rounds"); a need-full after it gets the
	// full page set.
	caughtUp map[NodeID]bool
	applied  bool
	stamp    pager.Stamp
	answerTo NodeID // CommitAnswering's member, while the commit is spread
	answer   []byte
	// What the owner last heard of each member's copy (noteCopy).
	copies map[NodeID]copyNews
	// The spares the last commits skipped (Set.Spares), and what they owe.
	deferred map[NodeID]*deferral
	// quiet: the runtime said the next commits skip no spare (Quiet).
	quiet bool
}

// deferral is what a spare was not sent: the commits after basis (the
// stamp of the last commit it was sent), as the keys they wrote or
// dropped.
type deferral struct {
	basis   pager.Stamp
	commits int
	keys    []string
}

// copyNews is what an owner last heard of one member's copy: the stamp of
// the newest of its commits the member answered, and whether that answer
// was need-full (the copy lacks the commit's basis: it missed one).
type copyNews struct {
	stamp  pager.Stamp
	behind bool
	have   *pager.Listing // a behind copy's listing, when its refusal had one
}

// NewSession starts nothing: call Open.
func NewSession(kind, key string, set Set, local *Replica, ballot Ballot) *Session {
	if set.Batch <= 0 {
		set.Batch = pager.DefaultBatchSize
	}
	return &Session{kind: kind, key: key, set: set, local: local, ballot: ballot,
		q: OwnerQuorumOf(len(set.Members), set.R, set.W)}
}

// Ballot returns the session's ballot.
func (s *Session) Ballot() Ballot { return s.ballot }

// State returns the session's current state.
func (s *Session) State() State { return s.state }

// Over reports whether the session failed (or was fenced) and must end.
func (s *Session) Over() bool { return s.over }

// Busy reports whether a round is in progress.
func (s *Session) Busy() bool { return s.round != RoundNone }

// Results returns and clears the rounds that ended since the last call.
func (s *Session) Results() []Result {
	r := s.results
	s.results = nil
	return r
}

// AppendResults appends the rounds that ended since the last call to dst
// and clears them, like Results, but keeps the session's own buffer for
// the rounds to come: a runtime that takes each round's result into a
// buffer of its own allocates nothing for it.
func (s *Session) AppendResults(dst []Result) []Result {
	dst = append(dst, s.results...)
	clear(s.results) // a Result may hold an error and a placement's facts
	s.results = s.results[:0]
	return dst
}

func (s *Session) msg(op Op) *Msg {
	return &Msg{Op: op, Kind: s.kind, Key: s.key, Ballot: s.ballot, Version: s.set.Version, Digest: s.set.Digest}
}

func (s *Session) begin(r Round) error {
	if s.over {
		return ErrClosed
	}
	if s.round != RoundNone {
		return ErrBusy
	}
	s.round = r
	s.answers = cleared(s.answers)
	s.oks, s.refused, s.abstain, s.fenced, s.atLimit = 0, 0, 0, false, false
	return nil
}

// finish ends the current round with err (nil: success).
func (s *Session) finish(err error) {
	res := Result{Round: s.round, Err: err, Fenced: s.fenced, Promised: s.highest, State: s.state, Version: s.version, Facts: s.facts, Abstained: s.abstain}
	if s.round == RoundCommit || s.round == RoundInstall {
		res.Applied = s.applied
	}
	if err != nil || s.fenced {
		s.over = true
	}
	s.round = RoundNone
	s.results = append(s.results, res)
}

// ask sends m to every member; the owner's own copy answers inline.
func (s *Session) ask(m func() *Msg) []Out {
	var out []Out
	for _, id := range s.set.Members {
		if id == s.set.Self {
			continue
		}
		out = append(out, Out{To: id, Msg: m()})
	}
	if self := s.has(s.set.Self); self {
		out = append(out, s.Step(s.set.Self, s.local.Handle(m(), s.set.Batch))...)
	}
	return out
}

func (s *Session) has(id NodeID) bool {
	for _, m := range s.set.Members {
		if m == id {
			return true
		}
	}
	return false
}

// Open starts the activation: the prepare round.
func (s *Session) Open() []Out {
	if err := s.begin(RoundPrepare); err != nil {
		return nil
	}
	s.promises = map[NodeID]State{}
	if s.set.W > len(s.set.Members) {
		s.finish(fmt.Errorf("%w: %s/%s needs %d acknowledgements, its replica set has %d member(s)",
			ErrQuorumUnavailable, s.kind, s.key, s.set.W, len(s.set.Members)))
		return nil
	}
	return s.ask(func() *Msg { return s.msg(OpPrepare) })
}

// Step feeds the reply of from to the session and returns the requests
// that follow. Replies that belong to no running round (duplicates, late
// answers of an earlier round) change nothing but what the owner knows of
// that member's copy (a late need-full: the next commit sends it the full
// page set); the runtime should feed them too.
func (s *Session) Step(from NodeID, m *Msg) []Out {
	if s.over || m == nil || m.Ballot != s.ballot || !s.has(from) {
		return nil
	}
	s.noteCopy(from, m)
	if s.round == RoundNone {
		return nil
	}
	if m.Status == StatusStale && m.Promised.Compare(s.highest) > 0 {
		s.highest = m.Promised
	}
	if m.Status == StatusBehind && (m.Version > s.version || s.facts == nil) {
		s.version, s.facts = m.Version, m.Facts
	}
	switch s.round {
	case RoundPrepare:
		if m.Op == OpPromise {
			return s.stepPrepare(from, m)
		}
	case RoundFetch:
		if m.Op == OpPages {
			return s.stepFetch(from, m)
		}
	case RoundInstall, RoundCommit:
		if m.Op == OpAck && m.Stamp == s.stamp {
			return s.stepCommit(from, m)
		}
	case RoundConfirm:
		// A confirmation names its round: one answering an earlier confirm
		// of this session (same ballot, late or duplicated) may predate this
		// read, and counting it would serve a state older than a write
		// acknowledged before the read began (SPEC.md, "Owner rounds").
		if m.Op == OpConfirmed && m.Part == s.confirmN {
			return s.stepConfirm(from, m)
		}
	}
	return nil
}

// noteCopy records a member's answer to one of this owner's commits, this
// round's or an earlier one's. A need-full that arrives after its round
// ended (the quorum was made without it) leaves the member's copy behind
// the owner's for good — every later delta is built on a commit it lacks —
// so spread sends that member the full page set next time (SPEC.md, "Owner
// rounds"). Only news of a newer commit than the last heard of (or sent in
// full, sentFull) changes anything.
func (s *Session) noteCopy(from NodeID, m *Msg) {
	if m.Op != OpAck || from == s.set.Self || (m.Status != StatusOK && m.Status != StatusNeedFull) {
		return
	}
	if c, ok := s.copies[from]; ok && m.Stamp.Compare(c.stamp) <= 0 {
		return
	}
	if s.copies == nil {
		s.copies = map[NodeID]copyNews{}
	}
	c := copyNews{stamp: m.Stamp, behind: m.Status == StatusNeedFull}
	if c.behind {
		c.have = m.Have
	}
	s.copies[from] = c
}

// tally records from's first verdict in a quorum round; it reports false
// for a duplicate.
func (s *Session) tally(from NodeID, st Status) bool {
	if _, dup := s.answers[from]; dup {
		return false
	}
	s.answers[from] = st
	switch st {
	case StatusOK:
		s.oks++
	case StatusStale:
		s.refused++
		s.fenced = true
	case StatusCorrupt, StatusMissing, StatusBehind, StatusUnsynced, StatusJoining:
		s.refused++
	case StatusFull:
		s.refused++
		s.atLimit = true
	}
	return true
}

func (s *Session) quorumLost(need int) error {
	if reachable(len(s.set.Members), s.refused+s.abstain, need) {
		return nil
	}
	if s.version > 0 {
		return fmt.Errorf("%w: %s/%s: replicas know placement version %d, this owner's is older", ErrQuorumUnavailable, s.kind, s.key, s.version)
	}
	if s.fenced {
		return fmt.Errorf("%w: %s/%s: a replica promised ballot %v, above this owner's %v", ErrFenced, s.kind, s.key, s.highest, s.ballot)
	}
	if s.atLimit {
		return fmt.Errorf("%w: %w: %s/%s: of %d replicas %d refused, at their limit of replicated state", ErrQuorumUnavailable, ErrFull, s.kind, s.key, len(s.set.Members), s.refused)
	}
	return fmt.Errorf("%w: %s/%s: of %d replicas %d refused and %d have not synced its range yet, %d answers needed", ErrQuorumUnavailable, s.kind, s.key, len(s.set.Members), s.refused, s.abstain, need)
}

func (s *Session) stepPrepare(from NodeID, m *Msg) []Out {
	st := m.Status
	if st == StatusOK && !m.Voter {
		// A member that entered the range and has not synced it: its
		// "nothing here" proves nothing. It promised all the same.
		if _, dup := s.answers[from]; dup {
			return nil
		}
		s.answers[from] = st
		s.abstain++
		st = 0xff
	} else if !s.tally(from, st) {
		return nil
	}
	if st == StatusOK {
		st := State{Promised: m.Promised, Accepted: m.Accepted, Stamp: m.Stamp}
		s.promises[from] = st
		if s.oks == 1 || s.best.Less(st) {
			s.best = st
		}
	}
	if err := s.quorumLost(s.q); err != nil {
		s.finish(err)
		return nil
	}
	if s.oks < s.q {
		return nil
	}
	if s.answers[s.set.Self] == StatusFull {
		// The owner's own copy applies every commit first, and at its limit
		// it takes none for an actor it holds nothing of: the activation
		// could never commit. Fail it now, definite (nothing was written).
		s.finish(s.errOwnFull())
		return nil
	}
	// The quorum is in: adopt the greatest (accepted ballot, stamp).
	s.best.Promised = Ballot{}
	s.holders = s.holders[:0]
	for _, id := range s.set.Members {
		if st, ok := s.promises[id]; ok && st.Same(s.best) {
			s.holders = append(s.holders, id)
		}
	}
	s.round = RoundNone
	own, _ := s.local.Get(s.kind, s.key)
	if !own.Same(s.best) {
		if !s.best.Stamp.IsZero() {
			return s.startFetch()
		}
		// The quorum holds nothing, and the owner's own copy is not among
		// its answers: it is a copy the owner made while it had not
		// synced the range (an orphan of a failed commit, not a voter's),
		// so no acknowledged write needs it. Serving it would show a
		// write the next owner, asking the same voters, does not see.
		if err := s.installOwn(nil); err != nil {
			s.finish(err)
			return nil
		}
	}
	return s.afterFetch()
}

// errOwnFull is the failure of a round the owner's own copy refused as
// full: definite, nothing was written.
func (s *Session) errOwnFull() error {
	return fmt.Errorf("%w: %w: %s/%s: the owner's own copy is at its limit of replicated state", ErrQuorumUnavailable, ErrFull, s.kind, s.key)
}

// installOwn makes the owner's own copy the adopted state (pages: its
// complete page set). The copy answered the owner's prepare at the start
// of the round; since then it may have promised a higher ballot and taken
// that owner's commit, which installing an older state over it would lose.
// So the install is refused, and the session fenced, when the copy's
// promise is above the session's ballot.
func (s *Session) installOwn(pages []pager.Page) error {
	if st, ok := s.local.Get(s.kind, s.key); ok && st.Promised.Compare(s.ballot) > 0 {
		s.fenced = true
		if st.Promised.Compare(s.highest) > 0 {
			s.highest = st.Promised
		}
		return fmt.Errorf("%w: %s/%s: this node promised ballot %v, above its own owner's %v", ErrFenced, s.kind, s.key, st.Promised, s.ballot)
	}
	return s.local.Install(s.kind, s.key, s.best, pages)
}

func (s *Session) startFetch() []Out {
	_ = s.begin(RoundFetch)
	s.src, s.part = 0, 0
	return s.fetchNext()
}

// fetchNext asks the current holder for the next part, moving on to the
// next holder when one fails.
func (s *Session) fetchNext() []Out {
	for s.src < len(s.holders) && s.holders[s.src] == s.set.Self {
		s.src++
	}
	if s.src >= len(s.holders) {
		s.finish(fmt.Errorf("%w: %s/%s: no replica holding state %v answered the fetch", ErrQuorumUnavailable, s.kind, s.key, s.best.Stamp))
		return nil
	}
	if s.part == 0 {
		s.have = map[string]pager.Page{}
		own, _ := s.local.Get(s.kind, s.key)
		var have *pager.Listing
		if !own.Stamp.IsZero() {
			l := s.local.Listing(s.kind, s.key)
			if len(l.Pages) <= maxListing {
				have = &l
				for _, p := range s.local.Pages(s.kind, s.key) {
					s.have[p.Key] = p
				}
			}
		}
		s.fetchHave = have
	}
	m := s.msg(OpFetch)
	m.Stamp, m.Part, m.Have = s.best.Stamp, s.part, s.fetchHave
	return []Out{{To: s.holders[s.src], Msg: m}}
}

// maxListing bounds the owner's listing sent with a fetch; a bigger one
// fetches every page instead.
const maxListing = 8192

func (s *Session) stepFetch(from NodeID, m *Msg) []Out {
	if from != s.holders[s.src] || m.Part != s.part {
		return nil
	}
	if m.Status != StatusOK || m.Delta == nil || m.Delta.Stamp != s.best.Stamp {
		s.src, s.part = s.src+1, 0
		return s.fetchNext()
	}
	d := m.Delta
	if s.part == 0 && (s.fetchHave == nil || d.Basis != s.fetchHave.Stamp) {
		// Not built on the owner's listing: the holder sends every page
		// (its copy is older than the owner's own, an orphan of a failed
		// commit, which a catch-up cannot start from). What the owner's
		// copy holds is then no part of the adopted state — a page only
		// the orphan wrote would survive into it, mixing two histories.
		clear(s.have)
	}
	for _, k := range d.Dropped {
		delete(s.have, k)
	}
	for _, p := range d.Pages {
		s.have[p.Key] = p
	}
	if !d.Final() {
		s.part++
		return s.fetchNext()
	}
	pages := make([]pager.Page, 0, len(s.have))
	for _, p := range s.have {
		pages = append(pages, p)
	}
	if err := s.installOwn(pages); err != nil {
		if errors.Is(err, ErrFenced) {
			s.finish(err)
			return nil
		}
		s.src, s.part = s.src+1, 0
		return s.fetchNext()
	}
	s.round = RoundNone
	return s.afterFetch()
}

// afterFetch decides whether the adopted state must be re-installed on a
// write quorum (too few copies hold it: it may be an orphan of a failed
// commit, which must not vanish again once served) and repairs lagging
// replicas.
func (s *Session) afterFetch() []Out {
	s.state = s.best
	if s.best.Stamp.IsZero() && s.best.Accepted.IsZero() {
		// Nothing committed anywhere in the quorum: by intersection no
		// write was ever acknowledged. Nothing to install.
		s.results = append(s.results, Result{Round: RoundPrepare, State: s.state})
		return nil
	}
	if len(s.holders) >= s.set.W {
		// Durable already; bring the lagging answerers up to date in the
		// background (no wait).
		s.results = append(s.results, Result{Round: RoundPrepare, State: s.state})
		return s.repair()
	}
	return s.install()
}

// repair sends the adopted state to the replicas that answered with an
// older one. Their acks arrive after the round and are ignored.
func (s *Session) repair() []Out {
	var out []Out
	full := s.local.Full(s.kind, s.key, pager.Stamp{}, s.set.Batch)
	for _, id := range s.set.Members {
		st, ok := s.promises[id]
		if !ok || id == s.set.Self || st.Same(s.best) {
			continue
		}
		for i := range full {
			m := s.msg(OpCommit)
			m.Delta = &full[i]
			out = append(out, Out{To: id, Msg: m})
		}
	}
	return out
}

// install writes the adopted state to the replica set under this ballot
// and waits for a write quorum.
func (s *Session) install() []Out {
	_ = s.begin(RoundInstall)
	s.full = s.local.Full(s.kind, s.key, pager.Stamp{}, s.set.Batch)
	s.parts = s.full
	s.stamp = s.best.Stamp
	s.fullSent = cleared(s.fullSent)
	s.caughtUp = cleared(s.caughtUp)
	s.applied = true
	return s.spread()
}

// Commit sends one handler's delta (from pager.Tracker.Prepare, split by
// the caller or not) to the replica set and waits for a write quorum. The
// owner's own copy applies it first: if it refuses, nothing was applied
// anywhere.
func (s *Session) Commit(d pager.Delta) []Out {
	return s.CommitAnswering(d, NodeID{}, nil)
}

// CommitAnswering is Commit for a call made from member to: when that
// member's vote is the one the owner's own copy still needs for the write
// quorum, the commit sent to it carries answer (Msg.Answer), so that its
// runtime can answer the caller as soon as its copy publishes the commit
// as a voter (Decides), a round trip before the owner learns it (SPEC.md,
// "Early answers"). Otherwise — to is the owner or not in the set, W needs
// more than the owner and to, the owner's own copy does not vote, or the
// commit travels in several parts — it is Commit. The round itself runs
// as Commit's: the owner still counts the acknowledgements, and its
// Result is the commit's outcome as the owner knows it.
func (s *Session) CommitAnswering(d pager.Delta, to NodeID, answer []byte) []Out {
	if err := s.begin(RoundCommit); err != nil {
		return nil
	}
	s.parts = d.Split(s.set.Batch)
	s.full = nil
	s.stamp = d.Stamp
	s.fullSent = cleared(s.fullSent)
	s.caughtUp = cleared(s.caughtUp)
	s.applied = false
	s.answerTo, s.answer = to, answer
	out := s.spread()
	s.answerTo, s.answer = NodeID{}, nil
	return out
}

// carriesAnswer reports whether the commit being spread may carry the call's
// answer to id: a member of the set other than the owner, whose vote alone
// completes the write quorum with the owner's own voting copy, and the
// commit is one message.
func (s *Session) carriesAnswer(id NodeID) bool {
	return len(s.answer) > 0 && id == s.answerTo && id != s.set.Self && s.has(id) && len(s.parts) == 1 &&
		s.round == RoundCommit && s.oks+1 >= s.set.W
}

// spread applies the round's parts to the owner's own copy, then sends
// them to the other members. A refusal by the owner's own copy (a newer
// ballot was promised here) ends the round before anything is sent.
func (s *Session) spread() []Out {
	out := make([]Out, 0, len(s.set.Members))
	if s.has(s.set.Self) {
		out = append(out, s.selfApply(s.parts)...)
		if s.round == RoundNone {
			return out
		}
		if st, answered := s.answers[s.set.Self]; !answered || st != StatusOK {
			// The owner's own copy refused: nothing was sent, so nothing
			// was applied anywhere (an install re-writes a state that
			// already exists, which is never "not applied").
			s.applied = s.round == RoundInstall
			err := fmt.Errorf("%w: %s/%s: the owner's own copy refused the commit (%v)", ErrQuorumUnavailable, s.kind, s.key, st)
			switch st {
			case StatusStale:
				err = fmt.Errorf("%w: %s/%s: this node promised ballot %v, above its own owner's %v", ErrFenced, s.kind, s.key, s.highest, s.ballot)
			case StatusFull:
				err = s.errOwnFull()
			}
			s.finish(err)
			return out
		}
	}
	// From here on the commit may be applied somewhere.
	s.applied = true
	carrier := NodeID{}
	if s.carriesAnswer(s.answerTo) {
		carrier = s.answerTo
	}
	for _, id := range s.set.Members {
		if id == s.set.Self {
			continue
		}
		parts := s.parts
		if c := s.copies[id]; s.round == RoundCommit && c.behind {
			// It refused an earlier commit for lack of its basis, after
			// that round ended: the delta would be refused too. What its
			// copy lacks, or else the full page set, is not.
			delete(s.deferred, id)
			if up := s.catchupParts(c.have); len(up) > 0 {
				parts = up
				s.sentCatchup(id)
			} else if full := s.fullParts(); len(full) > 0 {
				parts = full
				s.sentFull(id)
			}
		} else if s.round == RoundCommit && s.skip(id, carrier) {
			continue
		} else if s.round == RoundCommit && s.deferred[id] != nil {
			if s.parts[0].Full {
				// A full page set replaces whatever the spare holds: it
				// settles what the spare was owed.
				delete(s.deferred, id)
			} else {
				parts = s.owed(id, true)
			}
		}
		n := len(out)
		out = s.appendParts(out, id, parts)
		if len(parts) == 1 && s.carriesAnswer(id) {
			out[n].Msg.Answer = s.answer
		}
	}
	return out
}

// skip reports whether this commit skips the spare id (Set.Spares): the
// round's answer rides to carrier, whose vote with the owner's completes
// the write quorum, id is another member whose copy holds the key
// (holds), the commit is a delta — not a full page set, which replaces
// pages no list of written keys names (a deletion) — and id has been
// skipped fewer than Spares commits in a row. A skipped commit is
// recorded as owed.
func (s *Session) skip(id, carrier NodeID) bool {
	if s.set.Spares <= 0 || s.quiet || carrier == (NodeID{}) || id == carrier || len(s.parts) != 1 || s.parts[0].Full || !s.holds(id) {
		return false
	}
	df := s.deferred[id]
	if df == nil {
		if s.deferred == nil {
			s.deferred = map[NodeID]*deferral{}
		}
		df = &deferral{basis: s.parts[0].Basis}
		s.deferred[id] = df
	} else if df.commits >= s.set.Spares {
		return false
	}
	df.commits++
	df.keys = appendKeys(df.keys, &s.parts[0])
	return true
}

// Holds reports whether the owner knows id's copy holds some committed
// state of the key (holds). Until it does, the runtime feeds Step the
// acknowledgements that arrive after their round ended, which it may
// otherwise drop: on a hot key the spare's acknowledgement of the commit
// it was sent arrives after the caller's member decided the round, and
// without it the spare would never be skipped.
func (s *Session) Holds(id NodeID) bool { return s.holds(id) }

// holds reports whether the owner knows id's copy holds some committed
// state of the key: id promised one, or acknowledged one of this
// session's commits, and no need-full since marked it behind. A spare is
// never skipped before: a member with no copy does not know the key
// exists, and casty finds the durable actors a new owner must resume among
// the keys its copies hold (SPEC.md, "Spare copies").
func (s *Session) holds(id NodeID) bool {
	if c, ok := s.copies[id]; ok {
		return !c.stamp.IsZero() && !c.behind
	}
	return !s.promises[id].Stamp.IsZero()
}

// appendKeys appends the keys d writes or drops.
func appendKeys(keys []string, d *pager.Delta) []string {
	for i := range d.Pages {
		keys = append(keys, d.Pages[i].Key)
	}
	return append(keys, d.Dropped...)
}

// owed returns, and forgets, what the skipped spare id is owed: one delta
// from the last commit it was sent to the owner's copy now, this round's
// commit included when withRound (it was not recorded as skipped).
func (s *Session) owed(id NodeID, withRound bool) []pager.Delta {
	df := s.deferred[id]
	delete(s.deferred, id)
	keys := df.keys
	if withRound {
		for i := range s.parts {
			keys = appendKeys(keys, &s.parts[i])
		}
	}
	if parts := s.local.Since(s.kind, s.key, df.basis, keys, s.set.Batch); len(parts) > 0 {
		return parts
	}
	return s.fullParts() // unreachable: the owner's copy moved past basis
}

// Quiet says whether the actor went quiet before the commits about to be
// spread: while quiet, a commit skips no spare (Set.Spares) and settles
// what they are owed. Skipping pays on a hot key only: the spare of an
// actor that goes quiet after one commit would be sent its due on Flush
// anyway, the same message later and a delta more to build (SPEC.md,
// "Spare copies"). A new session is not quiet.
func (s *Session) Quiet(q bool) { s.quiet = q }

// Owed reports how many members are owed commits this session skipped
// (Set.Spares): the runtime calls Flush while it is positive.
func (s *Session) Owed() int { return len(s.deferred) }

// Flush sends every skipped spare what it is owed, as one delta to the
// owner's current copy. During a commit round whose answer has not come,
// their acknowledgements count toward its quorum (the runtime feeds them
// to Step); between rounds they change only what the owner knows of their
// copies. A spare a need-full marked behind is left to the next commit,
// which sends it what its copy lacks. A session that is over sends
// nothing: its last commit may have failed; nor does one whose owner's own
// copy a newer owner has written since (ownCopy), and what it owed is
// forgotten.
func (s *Session) Flush() []Out {
	if s.over || len(s.deferred) == 0 {
		return nil
	}
	own := s.ownCopy()
	var out []Out
	for _, id := range s.set.Members {
		if s.deferred[id] == nil {
			continue
		}
		if s.copies[id].behind || !own {
			delete(s.deferred, id)
			continue
		}
		out = append(out, s.sendParts(id, s.owed(id, false))...)
	}
	return out
}

// Settle returns what brings every member of the set the owner does not
// know to hold its last commit up to it: what Flush sends the skipped
// spares, and to a member a need-full marked behind (after its round
// ended, or answering a flush) the catch-up to the owner's copy, or else
// its full page set — what the next commit would send them. A runtime
// whose owner leaves calls it, between rounds, so that the owner's every
// acknowledged write is on every member of the set before it goes
// (SPEC.md, "Spare copies"); it feeds Step the answers (a need-full marks
// the member behind, and a second Settle catches it up). Nothing for a
// session that is over, in a round, or whose own copy a newer owner has
// written since (ownCopy): that owner's commits reach the set.
func (s *Session) Settle() []Out {
	if s.over || s.round != RoundNone || !s.ownCopy() {
		return nil
	}
	out := s.Flush()
	for _, id := range s.set.Members {
		if c, ok := s.copies[id]; id == s.set.Self || !ok || !c.behind {
			continue
		}
		if up := s.catchupParts(s.copies[id].have); len(up) > 0 {
			out = s.appendParts(out, id, up)
			s.sentCatchup(id)
		} else if full := s.fullParts(); len(full) > 0 {
			out = s.appendParts(out, id, full)
			s.sentFull(id)
		}
	}
	return out
}

// ownCopy reports whether the owner's own copy was last written under this
// session's ballot. Only then are its changes since a skipped spare's
// basis this session's skipped commits alone, which owed describes by
// their pages' keys. Once a newer owner has committed through this copy
// (this session deposed without knowing it), a delta of those keys stamped
// with the copy's stamp would give the spare that stamp without the newer
// owner's pages: Flush sends nothing, and the spare catches up from the
// newer owner's commits or anti-entropy (SPEC.md, "Spare copies"). In a
// commit round the owner's own copy has just accepted the round under this
// ballot, so spread needs no check.
func (s *Session) ownCopy() bool {
	st, ok := s.local.Get(s.kind, s.key)
	return ok && st.Accepted == s.ballot
}

// cleared empties m for reuse by the next round, making it if nil.
func cleared[V any](m map[NodeID]V) map[NodeID]V {
	if m == nil {
		return map[NodeID]V{}
	}
	clear(m)
	return m
}

// sentFull records that id is being sent the full page set of this
// round's commit (a need-full from it now is corrupt: fullSent), and takes
// it as caught up (caughtUpWith).
func (s *Session) sentFull(id NodeID) {
	s.fullSent[id] = true
	s.caughtUpWith(id)
}

// sentCatchup records that id is being sent a catch-up to this round's
// commit (a need-full from it now gets the full page set: caughtUp), and
// takes it as caught up (caughtUpWith).
func (s *Session) sentCatchup(id NodeID) {
	s.caughtUp[id] = true
	s.caughtUpWith(id)
}

// caughtUpWith takes id's copy as holding this round's commit, so only a
// refusal of a newer commit marks it behind again — not a late
// acknowledgement of what it was sent (which the runtime need not feed)
// nor an echo of the old refusal.
func (s *Session) caughtUpWith(id NodeID) {
	if s.copies == nil {
		s.copies = map[NodeID]copyNews{}
	}
	s.copies[id] = copyNews{stamp: s.stamp}
}

// catchupParts returns what brings a copy listed as have to the owner's own
// copy at this round's stamp (Replica.Catchup), or nil when there is no
// listing or no catch-up can do it.
func (s *Session) catchupParts(have *pager.Listing) []pager.Delta {
	if have == nil {
		return nil
	}
	up := s.local.Catchup(s.kind, s.key, *have, s.set.Batch)
	if len(up) == 0 || up[0].Stamp != s.stamp {
		return nil
	}
	return up
}

// fullParts returns the owner's own copy as a full page set, built once
// per round.
func (s *Session) fullParts() []pager.Delta {
	if s.full == nil {
		s.full = s.local.Full(s.kind, s.key, pager.Stamp{}, s.set.Batch)
	}
	return s.full
}

// sendParts returns the commit messages of parts for one member.
func (s *Session) sendParts(to NodeID, parts []pager.Delta) []Out {
	return s.appendParts(make([]Out, 0, len(parts)), to, parts)
}

// appendParts appends to out a commit to to for each of parts.
func (s *Session) appendParts(out []Out, to NodeID, parts []pager.Delta) []Out {
	for i := range parts {
		m := s.msg(OpCommit)
		m.Delta = &parts[i]
		out = append(out, Out{To: to, Msg: m})
	}
	return out
}

func (s *Session) stepCommit(from NodeID, m *Msg) []Out {
	switch m.Status {
	case StatusPending:
		return nil
	case StatusNeedFull:
		if s.fullSent[from] {
			s.tally(from, StatusCorrupt)
			break
		}
		if from != s.set.Self && !s.caughtUp[from] {
			if up := s.catchupParts(m.Have); len(up) > 0 {
				s.sentCatchup(from)
				return s.sendParts(from, up)
			}
		}
		s.sentFull(from)
		if from == s.set.Self {
			return s.selfApply(s.fullParts())
		}
		return s.sendParts(from, s.fullParts())
	default:
		if m.Status == StatusOK && !m.Voter {
			// Applied there, but it does not count: that member has not
			// synced the range on this placement.
			if _, dup := s.answers[from]; dup {
				return nil
			}
			s.answers[from] = StatusOK
			s.abstain++
			if from == s.set.Self {
				s.applied = true
			}
			break
		}
		if !s.tally(from, m.Status) {
			return nil
		}
		if m.Status == StatusOK && from == s.set.Self {
			s.applied = true
		}
	}
	if err := s.quorumLost(s.set.W); err != nil {
		s.finish(err)
		return nil
	}
	if s.oks >= s.set.W {
		s.state = State{Accepted: s.ballot, Stamp: s.stamp}
		s.finish(nil)
		return nil
	}
	if from != s.set.Self && (m.Status != StatusOK || !m.Voter) {
		// A vote the round counted on did not come: the spares it
		// skipped may still make the quorum.
		return s.Flush()
	}
	return nil
}

// selfApply applies parts to the owner's own copy, inline.
func (s *Session) selfApply(parts []pager.Delta) []Out {
	var out []Out
	reply := selfReplies.Get().(*Msg)
	for i := range parts {
		m := s.msg(OpCommit)
		m.Delta = &parts[i]
		s.local.HandleInto(reply, m, s.set.Batch)
		out = append(out, s.Step(s.set.Self, reply)...)
		if s.round == RoundNone || s.over {
			break
		}
	}
	*reply = Msg{}
	selfReplies.Put(reply)
	return out
}

// selfReplies holds the Msgs the owner's own copy answers its commits in:
// Step reads such a reply and keeps none of it but the pointers it copies
// out (a need-full listing).
var selfReplies = sync.Pool{New: func() any { return new(Msg) }}

// Confirm asks a read quorum whether this session's ballot is still the
// highest promise (Read(Majority)): success means no newer owner had
// committed when the replicas answered. Each confirm is numbered, and only
// answers to this one count (a late answer to an earlier one may predate
// the read).
func (s *Session) Confirm() []Out {
	if err := s.begin(RoundConfirm); err != nil {
		return nil
	}
	s.confirmN = (s.confirmN + 1) % pager.MaxParts
	return s.ask(func() *Msg {
		m := s.msg(OpConfirm)
		m.Part = s.confirmN
		return m
	})
}

// ConfirmAnswering is Confirm for a read called from the set's member to:
// the confirm sent to it carries answer, and this owner's state, when its
// reply is the one the read quorum still needs — the owner's own copy
// confirmed and q is at most that plus one (SPEC.md, "Early answers"). to
// may then answer its caller as soon as its own copy's reply decides the
// round (Decides). Otherwise it is Confirm.
func (s *Session) ConfirmAnswering(to NodeID, answer []byte) []Out {
	out := s.Confirm()
	own, confirmed := s.answers[s.set.Self]
	if len(answer) == 0 || to == s.set.Self || !s.has(to) || s.round != RoundConfirm ||
		!confirmed || own != StatusOK || s.oks+1 < s.q {
		return out
	}
	for _, o := range out {
		if o.To == to && o.Msg.Op == OpConfirm {
			o.Msg.Answer = answer
			o.Msg.Accepted, o.Msg.Stamp = s.state.Accepted, s.state.Stamp
		}
	}
	return out
}

func (s *Session) stepConfirm(from NodeID, m *Msg) []Out {
	st := m.Status
	if st == StatusOK && s.state.Less(State{Accepted: m.Accepted, Stamp: m.Stamp}) {
		st = StatusStale // a newer state exists: this owner is deposed
	}
	if !s.tally(from, st) {
		return nil
	}
	if err := s.quorumLost(s.q); err != nil {
		s.finish(err)
		return nil
	}
	if s.oks >= s.q {
		s.finish(nil)
	}
	return nil
}

// Expire ends the running round for want of answers before its deadline:
// ErrQuorumUnavailable (a commit's Applied says whether the owner's own
// copy took it).
func (s *Session) Expire() {
	if s.round == RoundNone || s.over {
		return
	}
	s.finish(fmt.Errorf("%w: %s/%s: %s round timed out with %d of %d answers (%d needed; %d refused, %d not synced)",
		ErrQuorumUnavailable, s.kind, s.key, s.round, s.oks, len(s.set.Members), s.need(), s.refused, s.abstain))
}

func (s *Session) need() int {
	if s.round == RoundCommit || s.round == RoundInstall {
		return s.set.W
	}
	return s.q
}
