// Counts with their nouns, one rule for the whole view: "1 node", "2 nodes".
// Its state: notebook/_words.py, counted().

// `count` may be a figure already shortened by amount() ("4.2 k"): only exactly 1 is singular.
export function counted(count, one, many = `${one}s`) {
  return `${count} ${String(count) === "1" ? one : many}`;
}
