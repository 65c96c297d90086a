// Enhancements of the server-rendered pages; every page works without this script.
// Each feature looks for its elements and does nothing when the page has none.
(() => {
  // A page opened at an anchor (a refused form posts to its own section) gets no autofocus from the browser:
  // focus the field in that section that asks for it once the page has loaded (earlier, the browser's own
  // handling of the anchor takes the focus back), where the anchor already scrolled.
  // A malformed fragment (`#%E0`) must not stop the rest of this script: it then names no section.
  let target = null;
  try {
    target = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
  } catch {
    target = null;
  }
  const autofocus = target?.querySelector('[autofocus]');
  if (autofocus) addEventListener('load', () => autofocus.focus({ preventScroll: true }), { once: true });
  // Copy buttons: <button data-copy="#element-id"> copies that element's value or text.
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.hidden = false;
    button.addEventListener('click', async () => {
      const source = document.querySelector(button.dataset.copy);
      if (!source) return;
      const text = 'value' in source ? source.value : source.textContent;
      const done = button.dataset.copied || '✓';
      try {
        await navigator.clipboard.writeText(text);
      } catch {
        // Without the clipboard API (plain http on another host): select it so that Ctrl-C works.
        if ('select' in source) source.select();
        return;
      }
      const before = button.textContent;
      button.textContent = done;
      setTimeout(() => {
        button.textContent = before;
      }, 1500);
    });
  }
  // Live feed options: <form data-options data-preview="…/preview"> asks the preview endpoint as the options
  // change and rewrites every link (data-link), the QR code (data-qr), the event preview (data-preview) and the
  // option fields of the notifications' e-mail form (data-notify-option), so that each follows what is chosen.
  const form = document.querySelector('form[data-options]');
  if (form) {
    const error = form.querySelector('[data-options-error]');
    let timer;
    let asked = 0;
    const params = () => {
      const query = new URLSearchParams();
      for (const [name, value] of new FormData(form)) {
        // Empty fields and a field left at its default (data-default) are no option: the URL stays short.
        const field = form.querySelector(`[name="${name}"][data-default]`);
        if (String(value).trim() === '' || (field && field.dataset.default === value)) continue;
        query.append(name, value);
      }
      return query;
    };
    const show = (answer) => {
      for (const element of document.querySelectorAll('[data-link]')) {
        const value = answer[element.dataset.link];
        if (typeof value !== 'string') continue;
        if (element.tagName === 'INPUT') element.value = value;
        else element.href = value;
      }
      for (const input of document.querySelectorAll('input[data-notify-option]')) {
        const value = answer.notify?.[input.dataset.notifyOption];
        if (typeof value === 'string') input.value = value;
      }
      const qr = document.querySelector('[data-qr]');
      if (qr && typeof answer.qrSvg === 'string') qr.innerHTML = answer.qrSvg;
      const fields = document.querySelector('[data-preview-fields]');
      const none = document.querySelector('[data-preview-none]');
      if (fields) fields.hidden = answer.preview === null;
      if (none) none.hidden = answer.preview !== null;
      for (const element of document.querySelectorAll('dd[data-preview]')) {
        element.textContent = answer.preview ? answer.preview[element.dataset.preview] || '' : '';
      }
    };
    const update = async () => {
      const query = params();
      const mine = ++asked;
      let response;
      let answer;
      try {
        response = await fetch(`${form.dataset.preview}?${query}`, { headers: { accept: 'application/json' } });
        answer = await response.json();
      } catch {
        return; // Offline or a server error: the form still works by submitting it.
      }
      if (mine !== asked) return;
      const marked = markFields(form, response.ok ? {} : answer.fields || {});
      if (!response.ok) {
        if (error) {
          error.textContent = marked ? error.dataset.refused || '' : answer.error || '';
          error.hidden = false;
        }
        return;
      }
      if (error) error.hidden = true;
      show(answer);
      const search = query.toString();
      history.replaceState(null, '', `${location.pathname}${search === '' ? '' : `?${search}`}`);
    };
    const soon = () => {
      clearTimeout(timer);
      timer = setTimeout(update, 250);
    };
    // The list of classes is the server's, for the options it was rendered with: while the subgroup or the
    // hidden kinds chosen differ from those, a note near it says it changes only once the form is applied.
    const pending = document.querySelector('[data-weeks-pending]');
    const listKey = (query) => JSON.stringify([query.getAll('subgroup'), query.getAll('exclude').sort()]);
    const listed = listKey(params());
    const markList = (query) => {
      if (pending) pending.hidden = listKey(query) === listed;
    };
    form.addEventListener('input', () => markList(params()));
    form.addEventListener('change', () => markList(params()));
    form.addEventListener('input', soon);
    form.addEventListener('change', soon);
  }

  // Option errors beside their fields: <p data-field-error="title"> next to the field named title. `fields` maps
  // a field's name to why it was refused; every other field's error is cleared. True when one was marked.
  function markFields(form, fields) {
    let marked = false;
    for (const note of form.querySelectorAll('[data-field-error]')) {
      const reason = fields[note.dataset.fieldError];
      note.textContent = typeof reason === 'string' ? reason : '';
      note.hidden = typeof reason !== 'string';
      marked = marked || !note.hidden;
      for (const control of form.querySelectorAll(`[name="${note.dataset.fieldError}"]`)) {
        if (note.hidden) control.removeAttribute('aria-invalid');
        else control.setAttribute('aria-invalid', 'true');
      }
    }
    return marked;
  }

  // A page about a timetable being loaded reloads itself when it is likely there: <p data-reload-after="10">.
  const reload = document.querySelector('[data-reload-after]');
  if (reload) setTimeout(() => location.reload(), Number(reload.dataset.reloadAfter) * 1000);
})();
