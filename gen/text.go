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

// grammar is the text grammar's word lists and the choice of phrase and
// sentence shapes; a draw from each picker is one random number.
type grammar struct {
	nouns, verbs, adjectives, adverbs, prepositions, auxiliaries, terminators picker[string]
	// np, vp and sentence pick the shape of a noun phrase (4 shapes), a
	// verb phrase (4) and a sentence (5), in the order of the switches in
	// build.
	np, vp, sentence picker[int]
}

func uniform[T any](vs []T) picker[T] {
	w := make([]int, len(vs))
	for i := range w {
		w[i] = 1
	}
	return newPicker(vs, w)
}

// plainGrammar gives every word and shape the same weight: the text of
// Lineitem since its first release, kept so its files stay the same.
func plainGrammar() grammar {
	return grammar{
		nouns: uniform(nouns), verbs: uniform(verbs), adjectives: uniform(adjectives),
		adverbs: uniform(adverbs), prepositions: uniform(prepositions),
		auxiliaries: uniform(auxiliaries), terminators: uniform(terminators),
		np: uniform([]int{0, 1, 2, 3}), vp: uniform([]int{0, 1, 2, 3}),
		sentence: uniform([]int{0, 1, 2, 3, 4}),
	}
}

func buildText(size int) string { return plainGrammar().build(0x7e47, size) }

// build returns size bytes of sentences drawn from g with the given seed.
func (g grammar) build(seed uint64, size int) string {
	r := newRNG(seed, 0, 0, 0)
	b := make([]byte, 0, size+256)
	word := func(p picker[string]) {
		b = append(b, p.pick(r)...)
		b = append(b, ' ')
	}
	noun := func() {
		switch g.np.pick(r) {
		case 0:
		case 1:
			word(g.adjectives)
		case 2:
			word(g.adjectives)
			b = append(b[:len(b)-1], ", "...)
			word(g.adjectives)
		case 3:
			word(g.adverbs)
			word(g.adjectives)
		}
		word(g.nouns)
	}
	verb := func() {
		switch g.vp.pick(r) {
		case 0:
			word(g.verbs)
		case 1:
			word(g.auxiliaries)
			word(g.verbs)
		case 2:
			word(g.verbs)
			word(g.adverbs)
		case 3:
			word(g.auxiliaries)
			word(g.verbs)
			word(g.adverbs)
		}
	}
	prep := func() {
		word(g.prepositions)
		b = append(b, "the "...)
		noun()
	}
	for len(b) < size {
		switch g.sentence.pick(r) {
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
		b = append(b[:len(b)-1], g.terminators.pick(r)...)
		b = append(b, ' ')
	}
	return string(b[:size])
}
