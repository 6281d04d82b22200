package gen

import (
	"strings"
	"sync"
)

// weighted parses "word weight|word weight|..."; a word may hold spaces.
func weighted(spec string) picker[string] {
	var words []string
	var weights []int
	for _, item := range strings.Split(spec, "|") {
		item = strings.TrimSpace(item)
		sp := strings.LastIndexByte(item, ' ')
		w := 0
		for _, c := range item[sp+1:] {
			w = w*10 + int(c-'0')
		}
		words = append(words, item[:sp])
		weights = append(weights, w)
	}
	return newPicker(words, weights)
}

// tpchGrammar is the TPC-H text grammar: its word lists (spec 4.2.2.13)
// with their weights. The heavy words (packages, requests, special,
// express...) are what queries 13 and 16 match on, so their weights set
// those queries' selectivity. It is made when text is first generated,
// not as every sluice process starts.
func tpchGrammar() grammar {
	nouns := weighted(`packages 40|requests 40|accounts 40|deposits 40|foxes 20|ideas 20|
		theodolites 20|pinto beans 20|instructions 20|dependencies 10|excuses 10|platelets 10|
		asymptotes 10|courts 5|dolphins 5|multipliers 1|sauternes 1|warthogs 1|frets 1|dinos 1|
		attainments 1|somas 1|Tiresias 1|patterns 1|forges 1|braids 1|hockey players 1|frays 1|
		warhorses 1|dugouts 1|notornis 1|epitaphs 1|pearls 1|tithes 1|waters 1|orbits 1|gifts 1|
		sheaves 1|depths 1|sentiments 1|decoys 1|realms 1|pains 1|grouches 1|escapades 1`)
	verbs := weighted(`sleep 20|wake 20|are 20|cajole 20|haggle 20|nag 10|use 10|boost 10|
		affix 5|detect 5|integrate 5|maintain 1|nod 1|was 1|lose 1|sublate 1|solve 1|thrash 1|
		promise 1|engage 1|hinder 1|print 1|x-ray 1|breach 1|eat 1|grow 1|impress 1|mold 1|
		poach 1|serve 1|run 1|dazzle 1|snooze 1|doze 1|unwind 1|kindle 1|play 1|hang 1|
		believe 1|doubt 1`)
	adjectives := weighted(`special 20|pending 20|unusual 20|express 20|furious 1|sly 1|
		careful 1|blithe 1|quick 1|fluffy 1|slow 1|quiet 1|ruthless 1|thin 1|close 1|dogged 1|
		daring 1|brave 1|stealthy 1|permanent 1|enticing 1|idle 1|busy 1|regular 50|final 40|
		ironic 40|even 30|bold 20|silent 10`)
	adverbs := weighted(`sometimes 1|always 1|never 1|furiously 50|slyly 50|carefully 50|
		blithely 40|quickly 30|fluffily 20|slowly 1|quietly 1|ruthlessly 1|thinly 1|closely 1|
		doggedly 1|daringly 1|bravely 1|stealthily 1|permanently 1|enticingly 1|idly 1|busily 1|
		regularly 1|finally 1|ironically 1|evenly 1|boldly 1|silently 1`)
	prepositions := weighted(`about 50|above 50|according to 50|across 50|after 50|
		against 40|along 40|alongside of 30|among 30|around 20|at 10|atop 1|before 1|behind 1|
		beneath 1|beside 1|besides 1|between 1|beyond 1|by 1|despite 1|during 1|except 1|for 1|
		from 1|in place of 1|inside 1|instead of 1|into 1|near 1|of 1|on 1|outside 1|over 1|
		past 1|since 1|through 1|throughout 1|to 1|toward 1|under 1|until 1|up 1|upon 1|
		without 1|with 1|within 1`)
	terminators := weighted(`. 50|; 1|: 1|? 1|! 1|-- 1`)
	return grammar{
		nouns: nouns, verbs: verbs, adjectives: adjectives, adverbs: adverbs,
		prepositions: prepositions, auxiliaries: uniform(auxiliaries), terminators: terminators,
		// Noun phrases N, J N, J, J N, D J N; verb phrases V, X V, V D,
		// X V D; sentences N V T, N V P T, N V N T, N P V N T, N P V P T.
		np:       newPicker([]int{0, 1, 2, 3}, []int{10, 20, 10, 50}),
		vp:       newPicker([]int{0, 1, 2, 3}, []int{30, 1, 40, 1}),
		sentence: newPicker([]int{0, 1, 2, 3, 4}, []int{3, 3, 3, 1, 1}),
	}
}

// tpchTextSize is the pool comments of the TPC-H tables are cut from.
// Larger than Lineitem's, since eight tables draw from it.
const tpchTextSize = 16 << 20

var tpchText = sync.OnceValue(func() string { return tpchGrammar().build(0x7e48, tpchTextSize) })

// Names of the TPC-H domains (spec 4.2.2.13 and 4.2.3).
var (
	regionNames = []string{"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"}
	nations     = []struct {
		name   string
		region int64
	}{
		{"ALGERIA", 0}, {"ARGENTINA", 1}, {"BRAZIL", 1}, {"CANADA", 1}, {"EGYPT", 4},
		{"ETHIOPIA", 0}, {"FRANCE", 3}, {"GERMANY", 3}, {"INDIA", 2}, {"INDONESIA", 2},
		{"IRAN", 4}, {"IRAQ", 4}, {"JAPAN", 2}, {"JORDAN", 4}, {"KENYA", 0},
		{"MOROCCO", 0}, {"MOZAMBIQUE", 0}, {"PERU", 1}, {"CHINA", 2}, {"ROMANIA", 3},
		{"SAUDI ARABIA", 4}, {"VIETNAM", 2}, {"RUSSIA", 3}, {"UNITED KINGDOM", 3}, {"UNITED STATES", 1},
	}
	colors = strings.Fields(`almond antique aquamarine azure beige bisque black blanched blue
		blush brown burlywood burnished chartreuse chiffon chocolate coral cornflower cornsilk
		cream cyan dark deep dim dodger drab firebrick floral forest frosted gainsboro ghost
		goldenrod green grey honeydew hot indian ivory khaki lace lavender lawn lemon light lime
		linen magenta maroon medium metallic midnight mint misty moccasin navajo navy olive
		orange orchid pale papaya peach peru pink plum powder puff purple red rose rosy royal
		saddle salmon sandy seashell sienna sky slate smoke snow spring steel tan thistle tomato
		turquoise violet wheat white yellow`)
	typeSyllables = [3][]string{
		{"STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"},
		{"ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"},
		{"TIN", "NICKEL", "BRASS", "STEEL", "COPPER"},
	}
	containerSyllables = [2][]string{
		{"SM", "LG", "MED", "JUMBO", "WRAP"},
		{"CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"},
	}
	segments   = []string{"AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"}
	priorities = []string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}
)
