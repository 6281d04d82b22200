package render

import (
	"reflect"
	"testing"
)

func TestWriterFor(t *testing.T) {
	for _, c := range []struct {
		name string
		want string // the error, or the writer: html or png
	}{
		{"job.html", "html"},
		{"job.HTM", "html"},
		{"out/job.Png", "png"},
		{"", "-o FILE.html or FILE.png is required"},
		{"job", `-o "job": want a .html or .png file`},
		{"job.svg", `-o "job.svg": want a .html or .png file`},
		{".png/job", `-o ".png/job": want a .html or .png file`},
	} {
		w, err := WriterFor(c.name)
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case reflect.ValueOf(w).Pointer() == reflect.ValueOf(WriteHTML).Pointer():
			got = "html"
		case reflect.ValueOf(w).Pointer() == reflect.ValueOf(WritePNG).Pointer():
			got = "png"
		}
		if got != c.want {
			t.Errorf("WriterFor(%q): %q, want %q", c.name, got, c.want)
		}
	}
}
