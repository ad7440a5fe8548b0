package builder

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	sprig "github.com/go-task/slim-sprig/v3"
)

// until, untilStep and seq are slim-sprig's, except that they count the numbers before making
// them and refuse more than MaxCount (slim-sprig's until 40000000 took 2 GiB and seconds), and
// that a step past the largest int ends the sequence instead of looping forever.

func until(count int) ([]int, error) {
	step := 1
	if count < 0 {
		step = -1
	}
	return untilStep(0, count, step)
}

func untilStep(start, stop, step int) ([]int, error) {
	n := sequenceLength(start, stop, step)
	if n > MaxCount {
		return nil, fmt.Errorf("%d numbers are over the limit of %d", n, MaxCount)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// sequenceLength is the count of numbers slim-sprig's untilStep gives: from start towards stop
// (excluded) by step, none when step goes the other way.
func sequenceLength(start, stop, step int) uint64 {
	var distance, stride uint64
	switch {
	case start < stop && step > 0:
		distance, stride = uint64(stop)-uint64(start), uint64(step)
	case start > stop && step < 0:
		distance, stride = uint64(start)-uint64(stop), -uint64(step)
	default:
		return 0
	}
	n := distance / stride
	if distance%stride != 0 {
		n++
	}
	return n
}

// seq is slim-sprig's seq (the numbers from start to end, end included, separated by spaces),
// bounded like untilStep.
func seq(params ...int) (string, error) {
	var start, end, step int
	switch len(params) {
	case 1:
		start, end, step = 1, params[0], 1
	case 2:
		start, end, step = params[0], params[1], 1
	case 3:
		start, step, end = params[0], params[1], params[2]
	default:
		return "", nil
	}
	direction := 1
	if end < start {
		direction = -1
		switch {
		case len(params) < 3:
			step = -1
		case step > 0:
			return "", nil
		}
	}
	numbers, err := untilStep(start, end+direction, step)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, n := range numbers {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(n))
	}
	return b.String(), nil
}

var (
	sprigUniq     = sprig.GenericFuncMap()["uniq"].(func(any) []any)
	sprigMustUniq = sprig.GenericFuncMap()["mustUniq"].(func(any) ([]any, error))
)

// uniq and mustUniq refuse lists of more than MaxUniqItems: slim-sprig compares every item
// with every item kept.
func uniq(list any) ([]any, error) {
	if err := uniqLength(list); err != nil {
		return nil, err
	}
	return sprigUniq(list), nil
}

func mustUniq(list any) ([]any, error) {
	if err := uniqLength(list); err != nil {
		return nil, err
	}
	return sprigMustUniq(list)
}

func uniqLength(list any) error {
	v := reflect.ValueOf(list)
	if (v.Kind() == reflect.Slice || v.Kind() == reflect.Array) && v.Len() > MaxUniqItems {
		return fmt.Errorf("a list of %d items is over the limit of %d", v.Len(), MaxUniqItems)
	}
	return nil
}
