# big-fares.awk: a stage in awk for sluice's exec, over CSV with a header
# line. It keeps the trips of a fare over 20 with their payment type, fare
# and tip, and adds card (true for a card payment):
#
#   sluice run 'scan ./taxi | exec --in csv --out csv -- awk -f big-fares.awk | show'
#
# does what sluice's own stages do in
#
#   sluice run "scan ./taxi | filter 'fare_amount > 20'
#       | select \"payment_type, fare_amount, tip_amount, payment_type = 'card' as card\" | show"
#
# The columns are found by their names in the header. (Fields are split at
# every comma: this reads CSV whose values hold no quoted commas.)
BEGIN { FS = OFS = "," }
NR == 1 {
	for (i = 1; i <= NF; i++) col[$i] = i
	print "payment_type", "fare_amount", "tip_amount", "card"
	next
}
$col["fare_amount"] != "" && $col["fare_amount"] + 0 > 20 {
	print $col["payment_type"], $col["fare_amount"], $col["tip_amount"], ($col["payment_type"] == "card" ? "true" : "false")
}
