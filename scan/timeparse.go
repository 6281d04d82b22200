package scan

import (
	"fmt"
	"time"
)

// parseDate reads 'YYYY-MM-DD' as midnight UTC.
func parseDate(s string) (time.Time, error) {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("'%s' is not a date (want 'YYYY-MM-DD')", s)
	}
	return t, nil
}

// dateTimeLayouts are what a quoted literal may hold against a timestamp
// column; without a zone the time is read as UTC.
var dateTimeLayouts = []string{
	"2006-01-02",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
}

func parseDateTime(s string) (time.Time, error) {
	for _, l := range dateTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("'%s' is not a date or time (want 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS[.fff][Z07:00]')", s)
}
