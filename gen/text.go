package gen

import "sync"

// The TPC-H text grammar (spec 4.2.2.10) and its word lists. Comments are
// substrings of one long text built from them, as dbgen does: a draw is
// two random numbers and no allocation.
var (
	nouns = []string{"foxes", "ideas", "theodolites", "pinto beans", "instructions",
		"dependencies", "excuses", "platelets", "asymptotes", "courts", "dolphins",
		"multipliers", "sauternes", "warthogs", "frets", "dinos", "attainments", "somas",
		"Tiresias'", "patterns", "forges", "braids", "hockey players", "frays", "warhorses",
		"dugouts", "notornis", "epitaphs", "pearls", "tithes", "waters", "orbits", "gifts",
		"sheaves", "depths", "sentiments", "decoys", "realms", "pains", "grouches", "escapades"}
	verbs = []string{"sleep", "wake", "are", "cajole", "haggle", "nag", "use", "boost",
		"affix", "detect", "integrate", "maintain", "nod", "was", "lose", "sublate", "solve",
		"thrash", "promise", "engage", "hinder", "print", "x-ray", "breach", "eat", "grow",
		"impress", "mold", "poach", "serve", "run", "dazzle", "snooze", "doze", "unwind",
		"kindle", "play", "hang", "believe", "doubt"}
	adjectives = []string{"furious", "sly", "careful", "blithe", "quick", "fluffy", "slow",
		"quiet", "ruthless", "thin", "close", "dogged", "daring", "brave", "stealthy",
		"permanent", "enticing", "idle", "busy", "regular", "final", "ironic", "even", "bold",
		"silent"}
	adverbs = []string{"sometimes", "always", "never", "furiously", "slyly", "carefully",
		"blithely", "quickly", "fluffily", "slowly", "quietly", "ruthlessly", "thinly",
		"closely", "doggedly", "daringly", "bravely", "stealthily", "permanently",
		"enticingly", "idly", "busily", "regularly", "finally", "ironically", "evenly",
		"boldly", "silently"}
	prepositions = []string{"about", "above", "according to", "across", "after", "against",
		"along", "alongside of", "among", "around", "at", "atop", "before", "behind",
		"beneath", "beside", "besides", "between", "beyond", "by", "despite", "during",
		"except", "for", "from", "in place of", "inside", "instead of", "into", "near", "of",
		"on", "outside", "over", "past", "since", "through", "throughout", "to", "toward",
		"under", "until", "up", "upon", "without", "with", "within"}
	auxiliaries = []string{"do", "may", "might", "shall", "will", "would", "can", "could",
		"should", "ought to", "must", "will have to", "shall have to", "could have to",
		"should have to", "must have to", "need to", "try to"}
	terminators = []string{".", ";", ":", "?", "!", "--"}
)

// textPoolSize is far larger than a compression block, so comments in
// one page rarely share more than their words, as with dbgen's 300 MB pool.
const textPoolSize = 4 << 20

// textPool is built once per process: it is immutable and the same for
// every seed (as dbgen's is), so sharing it cannot make output depend on
// concurrency.
var textPool = sync.OnceValue(func() string { return buildText(textPoolSize) })

func buildText(size int) string {
	r := newRNG(0x7e47, 0, 0, 0)
	b := make([]byte, 0, size+256)
	word := func(list []string) {
		b = append(b, list[r.n(uint64(len(list)))]...)
		b = append(b, ' ')
	}
	noun := func() {
		switch r.n(4) {
		case 0:
		case 1:
			word(adjectives)
		case 2:
			word(adjectives)
			b = append(b[:len(b)-1], ", "...)
			word(adjectives)
		case 3:
			word(adverbs)
			word(adjectives)
		}
		word(nouns)
	}
	verb := func() {
		switch r.n(4) {
		case 0:
			word(verbs)
		case 1:
			word(auxiliaries)
			word(verbs)
		case 2:
			word(verbs)
			word(adverbs)
		case 3:
			word(auxiliaries)
			word(verbs)
			word(adverbs)
		}
	}
	prep := func() {
		word(prepositions)
		b = append(b, "the "...)
		noun()
	}
	for len(b) < size {
		switch r.n(5) {
		case 0:
			noun()
			verb()
		case 1:
			noun()
			verb()
			prep()
		case 2:
			noun()
			verb()
			noun()
		case 3:
			noun()
			prep()
			verb()
			noun()
		case 4:
			noun()
			prep()
			verb()
			prep()
		}
		// The terminator replaces the trailing space and takes its own.
		b = append(b[:len(b)-1], terminators[r.n(uint64(len(terminators)))]...)
		b = append(b, ' ')
	}
	return string(b[:size])
}
