//go:build race

package fetch

const raceEnabled = true
