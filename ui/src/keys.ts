// Keyboard helpers shared by the window's shortcuts.

/** Input types in which a letter key types text (a range or a checkbox takes no letters). */
const TEXT_INPUT_TYPES = new Set(['text', 'search', 'number', 'email', 'url', 'password', 'tel', 'date', 'datetime-local', 'month', 'time', 'week']);

/**
 * True when a key pressed in `t` is typing text, so a global shortcut must leave it alone:
 * text inputs, textareas and editable content. A slider, a checkbox, a button or a select
 * does not take letters, so shortcuts keep working after using one.
 */
export function isTextEntry(t: EventTarget | null): boolean {
  if (!t || typeof (t as HTMLElement).tagName !== 'string') return false;
  const el = t as HTMLElement;
  if (el.isContentEditable) return true;
  if (el.tagName === 'TEXTAREA') return true;
  if (el.tagName === 'INPUT') return TEXT_INPUT_TYPES.has(((el as HTMLInputElement).type || 'text').toLowerCase());
  return false;
}

/** The view a digit key opens: 1 is the first of `views`, up to 9; null for any other key. */
export function viewForKey<V>(key: string, views: readonly V[]): V | null {
  if (!/^[1-9]$/.test(key)) return null;
  return views[Number(key) - 1] ?? null;
}
