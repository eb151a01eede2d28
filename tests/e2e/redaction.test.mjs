// Secrets and personal data in the real window: a memory whose secret was
// redacted at write time carries the "redacted" badge, the "redacted" filter shows only such
// memories, pii: tags show as tags, and the two settings are in the Decay view.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tempDb, lethe, openApp, closeApp, byTestId, waitFor, css, rowSel, nav } from './harness.mjs';

const visibleIds = async (driver) =>
  Promise.all((await driver.findElements(css('[data-testid="memory-row"]'))).map((r) => r.getAttribute('data-id')));

test('redacted badge, redacted filter, pii tags and the two settings', { timeout: 90_000 }, async () => {
  const db = tempDb();
  const secret = lethe(db, 'remember', '--type', 'semantic', '--content',
    'the CI bot uses ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5 to push tags');
  const pii = lethe(db, 'remember', '--type', 'episodic', '--content', 'ask ana.lopez@example.org about the invoice');
  const plain = lethe(db, 'remember', '--type', 'semantic', '--content', 'builds run on two cores');
  assert.equal(secret.redacted[0].kind, 'github_token', 'redacted at write time');
  assert.deepEqual(pii.pii_tags, ['pii:email']);

  const driver = await openApp(db);
  try {
    await nav(driver, 'memories');
    const row = await waitFor(async () => (await driver.findElements(css(rowSel(secret.id))))[0], 15000, 'secret row');
    // The badge is on the redacted memory only; the text never holds the token.
    const badge = await row.findElement(css('[data-testid="redacted-badge"]'));
    assert.equal((await badge.getText()).toLowerCase(), 'redacted');
    assert.match(await row.getText(), /\[REDACTED:github_token\]/);
    assert.doesNotMatch(await row.getText(), /ghp_/);
    const plainRow = await driver.findElement(css(rowSel(plain.id)));
    assert.equal((await plainRow.findElements(css('[data-testid="redacted-badge"]'))).length, 0, 'no badge on plain text');
    const piiRow = await driver.findElement(css(rowSel(pii.id)));
    const tag = await piiRow.findElement(css('[data-testid="pii-tag"]'));
    assert.equal(await tag.getText(), 'pii:email');

    // The filter: only the redacted memory remains; off again, all three are back.
    // (The filters sit in the Filters popover.)
    await (await byTestId(driver, 'filters-button')).click();
    await (await byTestId(driver, 'filter-redacted')).click();
    await waitFor(async () => {
      const ids = await visibleIds(driver);
      return ids.length === 1 && ids[0] === secret.id;
    }, 10000, 'only the redacted memory listed');
    await (await byTestId(driver, 'filter-redacted')).click();
    await waitFor(async () => (await visibleIds(driver)).length === 3, 10000, 'all memories listed again');

    // The settings: switching secrets to refuse is stored (the CLI sees it).
    await nav(driver, 'decay');
    const secrets = await byTestId(driver, 'setting-secrets', 15000);
    await byTestId(driver, 'setting-pii');
    assert.equal(await secrets.getAttribute('value'), 'redact');
    await secrets.findElement(css('option[value="refuse"]')).click();
    await waitFor(() => lethe(db, 'settings', 'secrets').secrets === 'refuse', 10000, 'secrets=refuse stored');
  } finally {
    await closeApp(driver);
  }
});
