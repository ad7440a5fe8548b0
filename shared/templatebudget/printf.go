package templatebudget

import (
	"fmt"
	"reflect"
)

// Printf is text/template's printf (fmt.Sprintf), except that widths and precisions over
// MaxWidth are refused and the size of the result is estimated first: fmt pads up to a width of
// a million per verb, and a format can repeat a verb on one argument (%[1]v%[1]v...) as often
// as it is long.
func Printf(format string, args ...any) (string, error) {
	if err := checkFormat(format, args); err != nil {
		return "", err
	}
	return fmt.Sprintf(format, args...), nil
}

// checkFormat walks the verbs of a format the way fmt does (flags, [n] argument indexes, *
// widths and precisions) and adds up what each verb may print: its width and precision and the
// size of its argument.
func checkFormat(format string, args []any) error {
	size, arg := len(format), 0
	// number reads a width or a precision at format[i:]: digits or *.
	number := func(i int) (int, error) {
		var n int
		var text string
		if i < len(format) && format[i] == '*' {
			if arg >= 0 && arg < len(args) {
				n, _ = intArgument(args[arg])
				text = fmt.Sprint(args[arg])
			}
			arg++
			i++
		} else {
			start := i
			for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
				n = min(n*10+int(format[i]-'0'), MaxWidth+1)
			}
			text = format[start:i]
		}
		if n > MaxWidth || n < -MaxWidth {
			return i, overLimit("width or precision %s is over the limit of %d", text, MaxWidth)
		}
		size += max(n, -n)
		return i, nil
	}
	// index reads an explicit argument index [n] at format[i:].
	index := func(i int) int {
		if i >= len(format) || format[i] != '[' {
			return i
		}
		n, j := 0, i+1
		for ; j < len(format) && format[j] >= '0' && format[j] <= '9' && n <= len(args); j++ {
			n = n*10 + int(format[j]-'0')
		}
		if j < len(format) && format[j] == ']' {
			arg = n - 1
			return j + 1
		}
		return i
	}
	var err error
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		for i++; i < len(format) && (format[i] == '+' || format[i] == '-' || format[i] == '#' || format[i] == ' ' || format[i] == '0'); i++ {
		}
		if i, err = number(index(i)); err != nil {
			return err
		}
		if i < len(format) && format[i] == '.' {
			if i, err = number(index(i + 1)); err != nil {
				return err
			}
		}
		i = index(i)
		if i >= len(format) || format[i] == '%' {
			continue
		}
		if arg >= 0 && arg < len(args) {
			size += int(SizeOf(args[arg], MaxValueSize))
		}
		arg++
		if size > MaxValueSize {
			return ResultOverLimit(size)
		}
	}
	return nil
}

// intArgument is fmt's reading of a * width: any integer type.
func intArgument(a any) (int, bool) {
	v := reflect.ValueOf(a)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(max(min(v.Int(), MaxWidth+1), -MaxWidth-1)), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int(min(v.Uint(), MaxWidth+1)), true
	}
	return 0, false
}
