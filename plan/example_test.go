package plan_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/sluice-data/sluice/plan"
)

// Parse a pipeline's text, print it back, encode it to the versioned
// JSON form a worker is sent, decode that, and read a stage's fields.
func ExampleParse() {
	p, err := plan.Parse(`scan s3://bucket/sales/ --columns city,year | filter "year == 2024" | head 10`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p)

	b, err := json.Marshal(p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))

	q, err := plan.Decode(b, false)
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range q.Stages {
		switch st := st.(type) {
		case *plan.Scan:
			fmt.Printf("%s: urls %v, columns %v\n", st.Name(), st.URLs, st.Columns)
		case *plan.Filter:
			fmt.Printf("%s: expr %q\n", st.Name(), st.Expr)
		case *plan.Head:
			fmt.Printf("%s: n %d\n", st.Name(), st.N)
		}
	}

	_, err = plan.Parse("head 3 | scan s3://bucket/sales/")
	fmt.Println(err)
	fmt.Println(errors.Is(err, plan.ErrInvalid))
	// Output:
	// scan --columns city,year s3://bucket/sales/ | filter 'year == 2024' | head 10
	// {"version":1,"stages":[{"stage":"scan","urls":["s3://bucket/sales/"],"columns":["city","year"],"batch_rows":65536,"int96_unit":"ns"},{"stage":"filter","expr":"year == 2024"},{"stage":"head","n":10}]}
	// scan: urls [s3://bucket/sales/], columns [city year]
	// filter: expr "year == 2024"
	// head: n 10
	// the first stage must be a source (scan, from-csv or merge), not head
	// true
}
