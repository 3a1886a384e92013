// Command castyctl inspects a running casty cluster and checks schemas.
//
// The cluster commands join the cluster as a lite member (casty.Connect):
// castyctl takes part in the membership for the length of the command,
// hosts nothing, and leaves when it is done. They need the address of a
// member or more (-seeds, or $CASTY_SEEDS) and, on a TLS cluster, the
// same certificates a member would use (-tls-cert, -tls-key, and -tls-ca
// for mutual TLS; see casty.TLS); -cluster names a cluster started with
// casty.ClusterName.
//
// On a cluster with credentials (SECURITY.md), state, spy, waiting and
// accept-loss need the operator role: on a cluster with secrets, -operator-secret-file (or
// $CASTY_OPERATOR_SECRET_FILE) names a file holding the operator secret
// (casty.WithOperatorSecret; a trailing newline is ignored); with
// certificate identity, -tls-identity and a certificate carrying the URI
// casty://role/operator. Without the role they fail with
// casty.ErrForbidden (exit code 4).
//
//	castyctl -seeds 10.0.0.1:7001 members [-all]
//	castyctl -seeds 10.0.0.1:7001 ring
//	castyctl -seeds 10.0.0.1:7001 ring shop.Order order-42
//	castyctl -seeds 10.0.0.1:7001 ring -replicas 3 shop.Account acct-7
//	castyctl -seeds 10.0.0.1:7001 spy -kind 'shop.*' -key 'order-*' -payloads
//	castyctl -seeds 10.0.0.1:7001 state shop.Order order-42
//	castyctl -seeds 10.0.0.1:7001 waiting
//	castyctl -seeds 10.0.0.1:7001 accept-loss -yes 3f2df870-f2c5-55aa-2dab-0f108d2bc35b
//
// members prints the member table as a full member sees it (a lite
// member that has just joined knows nothing yet of a member that stopped
// answering before): every member's address, node id, role (member or
// lite), state (alive, suspect, left, dead; departed and dead members
// until their tombstones expire), how long it has been in that state
// (FOR: for a member suspected a second ago, about a second), and
// incarnation. castyctl's own record is left out, and so are lite members
// that left (earlier castyctl runs among them) unless -all.
//
// ring without arguments prints, for each live full member, how many
// ring ranges (virtual nodes) it owns, the share of the key space they
// cover (the expected share of keys), and how many ranges it holds a
// replica of for -replicas N. With KIND KEY it prints the key's owner and
// replicas (with -replicas N for a replicated kind: castyctl does not link
// the program's kinds, so it cannot know the count) and the key's ring
// point.
//
// spy prints lifecycle events (activated, received, completed, failed,
// deactivated; lag and gap when events were lost) from every member as
// they happen, selected by -kind and -key globs (path.Match, evaluated on
// each member), with arguments and results under -payloads. It runs until
// interrupted, for -for a duration, or for -n events.
//
// state prints the live state of one actor as JSON (fields by their wire
// names), read between two messages without queueing behind the mailbox
// (casty.System.StateOf). It asks the members in turn, the key's ring
// owner first, so it finds replicated kinds without -replicas.
//
// waiting asks every live full member which syncs of replicated kinds
// wait for members removed as dead or departed (casty.System.PlacementStatus) and
// prints, per member, its placement version, how many members' copies
// were given up (LOST), and each kind whose syncs wait with the ids of
// the removed members they wait for. A range waits when fewer than a read
// quorum of its previous holders remain: its one copy left may lack
// writes only the removed members acknowledged, so no owner serves its
// keys until they come back (casty.System.Health names them too).
//
// accept-loss -yes ID... gives up for good the copies held by the members
// named, removed as dead or departed before their handoff ended: a full member records their loss as an agreed placement
// change (casty.System.AcceptLoss, asked through
// casty.System.AcceptLossVia since castyctl does not vote on the
// placement), the waiting ranges sync from the members that remain and
// are served again, and every write only those members held is lost. Use
// it only for members that will never come back with their state (their
// disks are gone); a member that comes back needs nothing. It refuses to
// run without -yes (exit 2), and a member still placed or never placed
// is refused with casty.ErrNotRemoved (exit 4): castyctl waiting lists the
// members that can be given up.
//
// # Schemas
//
// A program exports the wire schema of everything it declares — actor
// kinds (state fields, handler signatures, replica count), services and
// registered messages — with casty.WriteSchema, behind a flag of its own:
//
//	func main() {
//		if len(os.Args) == 2 && os.Args[1] == "-casty-schema" {
//			if err := casty.WriteSchema(os.Stdout); err != nil {
//				log.Fatal(err)
//			}
//			return
//		}
//		…
//	}
//
// castyctl prints such a schema from a file, from stdin (-), or by
// running the program:
//
//	castyctl schema new.json
//	castyctl schema -json -- ./shop -casty-schema > new.json
//
// and schema check compares the schema of the release in production with
// the new one, failing (exit 1) on a change that would break a rolling
// deploy, where members of both versions run side by side:
//
//	./shop -casty-schema > new.json
//	castyctl schema check released.json new.json
//
// Breaking: a field (of a message or an actor's state) that changed type,
// including integer width; a wire name now used by an unrelated type (a
// different Go type with no field in common); a handler whose shape,
// argument or result type changed; a kind whose replica count changed or
// that turned between actor and service. Warnings (reported, not failing):
// a removed message, kind or handler, which members of the old version may
// still use until the deploy completes. Compatible: added and removed
// fields (wire/SPEC.md, "Schema evolution"), added kinds, handlers and
// messages, a Go type renamed under the same wire name. Keep the schema of
// each release (e.g. next to its artifact) as the OLD of the next check.
//
// # Output and exit codes
//
// Output is aligned tables by default; -json prints JSON instead (one
// JSON object per event, JSON Lines, for spy). Flags may come before or
// after the command and its arguments. Diagnostics go to stderr (-v adds
// the lite member's log).
//
//	0  success (schema check: no breaking change)
//	1  schema check found a breaking change
//	2  usage: unknown command, bad flag or argument, no seeds or an invalid one, accept-loss without -yes
//	3  the cluster could not be joined (no seed answered, TLS or cluster name refused)
//	4  the operation failed (an error from the cluster, an unreadable schema)
//	5  state: the actor is not active
package main
