package spillfile

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// On Linux a spill file never has a name, not even for the moment
// between creating and removing one, where a SIGKILL would leave it:
// the kernel shows an O_TMPFILE file as "#inode", not by the pattern.
func TestUnnamedFromTheStart(t *testing.T) {
	dir := t.TempDir()
	if f, ok := createUnnamed(dir, "probe-*"); ok {
		f.Close()
	} else {
		t.Skipf("%s's file system refuses O_TMPFILE: Create names the file and removes the name at once", dir)
	}
	f, err := Create(dir, "sluice-test-*")
	if err != nil {
		t.Fatal(err)
	}
	defer Remove(f)
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(link, "sluice-test-") {
		t.Fatalf("the file was named (%s): created then removed, not O_TMPFILE", link)
	}
	t.Logf("open as %s", link)
}
