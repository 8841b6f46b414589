// Values a client chose (hello fields, audiences, NACK reasons, peers) are logged and quoted in
// messages only this long: a refusal must not let a client write megabytes into the log.
const DEFAULT_MAX = 128;

/** `value` as is when short; otherwise its first `max` characters and how long it was. */
export function clip(value: string, max = DEFAULT_MAX): string {
  return value.length <= max ? value : `${value.slice(0, max)}… (${value.length} characters)`;
}
